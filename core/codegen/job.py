"""A rendered job as one typed object: its files and what the Launch page, `launch` and the Monitor need of it.

`render_job` returns a `Job`; `load_job` reads one back from a job folder's job.json. A Job is also the
mapping filename -> text of its files, which is what gets written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.codegen.jobfolder import JOB_FILE
from core.codegen.launchers import job_launcher
from core.codegen.options import CodegenError, RunOptions
from core.files import read_checked

JOB_FORMAT = 1  # job.json's "shardscope_job"
MAX_JOB_JSON_BYTES = 1 << 20  # a generated job.json is about 1 KB


@dataclass(frozen=True)
class Job(Mapping[str, str]):
    design: str
    options: RunOptions
    files: Mapping[str, str]  # filename -> text: train.py, run.sh, README.md, job.json (+ job.sbatch)
    notes: tuple[str, ...] = ()
    log_dir: str = "."  # the folder a log watcher watches, relative to the job folder
    log_pattern: str = ""
    node_commands: tuple[str, ...] = ()
    plan: dict[str, Any] | None = field(default=None, compare=False)  # a Planner-made design's memory plan

    def __getitem__(self, name: str) -> str:
        return self.files[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

    def facts(self) -> dict[str, Any]:
        """What job.json records (without the files)."""
        facts: dict[str, Any] = {
            "shardscope_job": JOB_FORMAT,
            "design": self.design,
            "scenario": self.options.scenario,
            "options": self.options.to_dict(),
            "log_dir": self.log_dir,
            "log_pattern": self.log_pattern,
            "node_commands": list(self.node_commands),
            "notes": list(self.notes),
        }
        if self.plan is not None:
            facts["plan"] = self.plan
        return facts


def job_json(job: Job) -> str:
    return json.dumps(job.facts(), indent=2) + "\n"


def load_job(job_dir: str | Path) -> Job:
    """The job a folder holds, from its job.json (files not read: `launch` copies the folder's own, edited or not)."""
    path = Path(job_dir) / JOB_FILE
    try:
        data = json.loads(read_checked(path, MAX_JOB_JSON_BYTES, "job file").decode("utf-8"))
        options = RunOptions.from_dict(dict(data["options"]))
        plan = data.get("plan")
        return Job(
            design=str(data.get("design", "")),
            options=options,
            files={},
            notes=tuple(str(n) for n in data.get("notes", ())),
            # from the options (checked names), never the file's text: a run's logs stay inside its folder
            log_dir=job_launcher(options).log_dir(options),
            log_pattern=str(data.get("log_pattern", "")),
            node_commands=tuple(str(c) for c in data.get("node_commands", ())),
            plan=plan if isinstance(plan, dict) else None,
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CodegenError(
            f"{job_dir} is not a ShardScope job folder ({JOB_FILE} missing or unreadable: {exc})"
        ) from None
