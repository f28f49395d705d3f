"""Runs: the registry on disk, launch / stop under a supervisor, launchers, preflight, rehearsal.

    record = launch(job_dir, workspace)      # core.run.launch
    stop(record.run_id, workspace)           # stop signal, then the process group; verified empty
    list_runs(workspace)                     # core.run.registry, newest first
"""
