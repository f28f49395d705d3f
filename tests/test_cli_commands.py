"""Every command module is reachable from `python -m core` (a module left out of COMMANDS is a command
users cannot run), and the diagnosis contract holds through the real entry point."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import core.cli
from core.__main__ import build_parser, main
from core.codegen import read_job
from core.sharding.design import load_design
from core.workspace import REPO_ROOT

FAILED_RUN = REPO_ROOT / "tests" / "fixtures" / "real_msrun_logs" / "semi_auto_on_cpu_error"


def test_every_command_module_is_registered() -> None:
    modules = [importlib.import_module(f"core.cli.{info.name}") for info in pkgutil.iter_modules(core.cli.__path__)]
    commands = [m for m in modules if hasattr(m, "register")]
    assert sorted(m.__name__ for m in commands) == sorted(m.__name__ for m in core.cli.COMMANDS)
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in ("preview", "model", "plan", "generate", "check", "launch", "stop", "runs", "watch", "diagnose"):
        assert name in choices
    # main() imports only the module of the command it is given: MODULE_OF must name each one's module
    assert list(choices) == list(core.cli.MODULE_OF)
    for name, module in core.cli.MODULE_OF.items():
        assert name in build_parser(name)._subparsers._group_actions[0].choices, module  # type: ignore[union-attr]


def test_a_command_imports_only_what_it_needs() -> None:
    """`plan` and `launch` refuse a bad YAML in a fraction of a second: neither imports the log reader
    (pandas), which only watch / diagnose / watch-folder need."""
    for command in ("plan", "launch"):
        probe = (
            "import sys; from core.__main__ import build_parser; "
            f"build_parser({command!r}); print('pandas' in sys.modules)"
        )
        out = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        assert out.stdout.strip() == "False", (command, out.stderr)


def test_diagnose_json_through_python_m_core() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "core", "diagnose", str(FAILED_RUN), "--json"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1  # a rank failed
    report = json.loads(result.stdout)
    assert report["ranks"] == 8
    assert {"stragglers", "hung", "failure_groups"} <= set(report)
    group = report["failure_groups"][0]
    assert {"exception", "ranks", "first_rank", "first_time"} <= set(group)
    assert "Invalid communication backend: CPU" in group["exception"]


def test_every_command_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`python -m core model ... | head -1`: the reader is gone before the summary is printed."""
    argv = [
        sys.executable,
        "-m",
        "core",
        "model",
        "llama",
        "--hidden",
        "256",
        "--heads",
        "4",
        "--ffn",
        "512",
        "--seq",
        "64",
        "--batch",
        "2",
        "--layers",
        "2",
        "--vocab",
        "1000",
        "--out",
        str(tmp_path / "d.json"),
    ]
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first print meets a closed pipe
    try:
        res = subprocess.run(argv, cwd=REPO_ROOT, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert "Traceback" not in res.stderr and "BrokenPipeError" not in res.stderr, res.stderr
    assert res.returncode == 0


def test_generate_never_overwrites_a_file_it_did_not_write_unless_forced(tmp_path: Path, capsys) -> None:
    """`generate --out DIR` into a folder of the user's own, or over a train.py they edited: one line, exit 2,
    the file untouched; `--force` replaces it; ShardScope's own untouched output is regenerated freely."""
    own = tmp_path / "own"
    own.mkdir()
    (own / "README.md").write_text("my notes\n")
    assert main(["generate", "--out", str(own)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "README.md" in err and "--force" in err and "Traceback" not in err
    assert (own / "README.md").read_text() == "my notes\n" and not (own / "train.py").exists()

    job = tmp_path / "job"
    assert main(["generate", "--out", str(job), "--epochs", "2"]) == 0
    capsys.readouterr()
    assert main(["generate", "--out", str(job), "--epochs", "3"]) == 0  # its own output, unchanged since
    assert "replaced the earlier train.py, run.sh, README.md" in capsys.readouterr().out  # said, not silent
    assert read_job(job)[1].epochs == 3
    edited = (job / "train.py").read_text() + "# my change\n"
    (job / "train.py").write_text(edited)
    capsys.readouterr()
    assert main(["generate", "--out", str(job), "--epochs", "4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "train.py" in err and "run.sh" not in err
    assert (job / "train.py").read_text() == edited and read_job(job)[1].epochs == 3
    assert main(["generate", "--out", str(job), "--epochs", "4", "--force"]) == 0
    assert "# my change" not in (job / "train.py").read_text() and read_job(job)[1].epochs == 4


def test_generate_refuses_a_link_or_fifo_in_place_of_a_generated_file(tmp_path: Path, capsys) -> None:
    """A symlink named train.py (or a FIFO) is not ShardScope's: refused, and never followed or opened."""
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    job = tmp_path / "job"
    job.mkdir()
    (job / "train.py").symlink_to(target)
    os.mkfifo(job / "run.sh")
    assert main(["generate", "--out", str(job)]) == 2
    err = capsys.readouterr().err
    assert "train.py" in err and "run.sh" in err
    assert target.read_text() == "keep\n"


def test_model_refuses_a_name_every_later_command_would_refuse(tmp_path: Path, capsys) -> None:
    """`model --name '../x' --out f.json` used to say "wrote" and exit 0 for a design load_design refuses."""
    out = tmp_path / "f.json"
    for name in ("../x", "a/b", "", "x" * 65, " spaced"):
        assert main(["model", "mlp", "--name", name, "--out", str(out)]) == 2
        captured = capsys.readouterr()
        assert captured.err.startswith("error: design name") and captured.err.count("\n") == 1, captured.err
        assert "wrote" not in captured.out and not out.exists()
    assert main(["model", "mlp", "--name", "fine-name_1.0", "--out", str(out)]) == 0
    assert load_design(out).name == "fine-name_1.0"


def test_a_ctrl_c_before_a_commands_own_handler_is_one_line_and_130(capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C pressed while a command still sets up (watch before its loop): no traceback, the shell's 130."""
    from core.cli.common import INTERRUPTED, quiet_on_closed_pipe

    def setting_up(_args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    code = quiet_on_closed_pipe(setting_up)(argparse.Namespace(command="watch"))
    err = capsys.readouterr().err
    assert code == INTERRUPTED == 130
    assert err == "interrupted: watch stopped by Ctrl-C\n"
