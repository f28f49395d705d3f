"""Runs: the registry on disk, launch / stop under a supervisor, launchers, preflight, rehearsal.

    record = launch(job_dir, workspace)      # core.run.launch: a generated job folder
    record = launch_own(OwnJob(script="train.py", device_num=8), workspace)   # core.run.own: your script
    record = watch_folder("/shared/log_output", workspace)                  # watch only, no Stop
    stop(record.run_id, workspace)           # stop signal (scancel on Slurm), then verified empty
    list_runs(workspace)                     # core.run.registry, newest first

Slurm: core.run.slurm (sbatch / scontrol / squeue / scancel / sinfo as argv lists) behind the
`slurm` launcher (core.run.launchers.slurm); job.sbatch is rendered by core.codegen.sbatch.
"""
