"""Hostile MindFormers YAML (issue 31 item 1): how fast, and in how much memory, each is refused or read.

In-process: the bounded loader (core.plan.safeyaml through core.plan.mfconfig) on the alias bomb at levels 7,
8 and 9, a 5,000-digit integer, a 20,000-digit hex integer, 800 KB of base 60 (`1:1:1:...`, which YAML 1.1
converted in quadratic time), a UTF-16 file, and at the 1 MiB bound: copies of a real config and a flat list
(both refused once they pass MAX_VALUES: counted while composing) and one long string (read). Each line: the
outcome, wall time, and the growth of the process's peak RSS.
CLI (`--cli`): `python -m core plan --mindformers-config BOMB` and `launch --script ... --mindformers-config BOMB`
as fresh processes: exit code, wall time, the child's own peak RSS (os.wait4), next to `plan` on a real config
(the process's start-up: imports) so the refusal's own cost shows. Before (the issue): level 8 took 43-52 s
and 2.9 GB then a MemoryError traceback; the Planner grew to 22 GB.
Prints figures; not a test. Run: .venv/bin/python benchmarks/bench_yaml.py [--cli]
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.errors import UserError
from core.plan.mfconfig import MAX_CONFIG_BYTES, read_config

REPO = Path(__file__).resolve().parent.parent

FIXTURE = (
    REPO / "tests/fixtures/mindformers/mindspore-lab__mindformers@v1.3.0__configs__llama2__pretrain_llama2_7b_bf16.yaml"
)


def bomb(levels: int, width: int = 9) -> str:
    """The issue's file: nested aliases `levels` deep, model_config.hidden_size and data_parallel the last."""
    lines = ["l0: &l0 [" + ", ".join(['"lol"'] * width) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return (
        "\n".join(lines)
        + f"\nmodel:\n  model_config:\n    hidden_size: *l{levels}\n    num_layers: 2\n    num_heads: 2\n"
        + f"    vocab_size: 100\n    seq_length: 16\nparallel_config:\n  data_parallel: *l{levels}\n"
    )


def files(folder: Path) -> dict[str, Path]:
    base = FIXTURE.read_text(encoding="utf-8")
    made: dict[str, str | bytes] = {f"bomb level {n}": bomb(n) for n in (7, 8, 9)}
    made["5,000-digit integer"] = base.replace("data_parallel: 8", "data_parallel: " + "9" * 5000)
    made["20,000-digit hex"] = base.replace("data_parallel: 8", "data_parallel: 0x" + "f" * 20_000)
    made["max_device_memory 1e21 GB"] = base.replace('"59GB"', "'999999999999999999999GB'")
    made["800 KB of base 60"] = base + "sexagesimal: " + ":".join(["1"] * 400_000) + "\n"
    made["UTF-16"] = base.encode("utf-16")
    block = base.replace("&", "&x").replace("*", "*x")
    valid, i = base, 0
    while True:  # copies of the config under new keys (anchors renamed), up to the 1 MiB accepted
        renamed = block.replace("&x", f"&x{i}_").replace("*x", f"*x{i}_")
        more = f"copy{i}:\n" + "".join(f"  {line}\n" for line in renamed.splitlines())
        if len((valid + more).encode()) > MAX_CONFIG_BYTES:
            break
        valid, i = valid + more, i + 1
    made["1 MiB of config copies"] = valid  # ~50 copies: more than MAX_VALUES, refused where it crosses
    made["1 MiB flat list"] = base + "flat: [" + ",".join(["0"] * ((MAX_CONFIG_BYTES - len(base) - 16) // 2)) + "]\n"
    made["1 MiB string value"] = base + 'note: "' + "x" * (MAX_CONFIG_BYTES - len(base) - 16) + '"\n'  # read
    paths = {}
    for name, content in made.items():
        path = folder / (name.replace(" ", "_").replace(",", "") + ".yaml")
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        paths[name] = path
    return paths


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_process(paths: dict[str, Path]) -> None:
    print(f"{'file':28} {'bytes':>9} {'seconds':>8} {'peak RSS +MB':>12}  outcome")
    for name, path in paths.items():
        before = peak_rss_mb()
        start = time.perf_counter()
        try:
            config = read_config(path)
            outcome = f"read: {config.recipe.label()}"
        except UserError as exc:
            outcome = "refused: " + str(exc).replace(f"MindFormers config {path}", "FILE")
        took = time.perf_counter() - start
        grew = peak_rss_mb() - before
        print(f"{name:28} {path.stat().st_size:>9,} {took:>8.3f} {grew:>12.1f}  {outcome[:150]}")


def child(argv: list[str], cwd: Path) -> tuple[int, float, float, str]:
    """(exit code, wall seconds, the child's peak RSS in MB, its last stderr line) of `python -m core ...`."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "SHARDSCOPE_WORKSPACE": str(cwd / "ws")}
    err = cwd / "stderr.txt"
    start = time.perf_counter()
    with err.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "core", *argv], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=sink
        )
        _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = err.read_text(errors="replace").strip().splitlines()
    return proc.returncode, took, usage.ru_maxrss / 1024, lines[-1] if lines else ""


def cli(paths: dict[str, Path], folder: Path) -> None:
    script = folder / "train.py"
    script.write_text("print('never run')\n")
    runs: list[tuple[str, Callable[[], list[str]]]] = [
        ("plan, a real config", lambda: ["plan", "--mindformers-config", str(FIXTURE)]),
        ("plan, bomb level 8", lambda: ["plan", "--mindformers-config", str(paths["bomb level 8"])]),
        ("plan, bomb level 9", lambda: ["plan", "--mindformers-config", str(paths["bomb level 9"])]),
        (
            "launch, bomb level 8",
            lambda: [
                "launch",
                "--script",
                str(script),
                "--devices",
                "8",
                "--mindformers-config",
                str(paths["bomb level 8"]),
            ],
        ),
        ("plan, 5,000-digit integer", lambda: ["plan", "--mindformers-config", str(paths["5,000-digit integer"])]),
    ]
    print(f"\n{'command':28} {'exit':>4} {'seconds':>8} {'peak RSS MB':>11}  stderr's last line")
    for name, argv in runs:
        code, took, rss, last = child(argv(), folder)
        print(f"{name:28} {code:>4} {took:>8.2f} {rss:>11.0f}  {last[:100]}")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-yaml-") as tmp:
        folder = Path(tmp)
        paths = files(folder)
        in_process(paths)
        if "--cli" in sys.argv:
            cli(paths, folder)


if __name__ == "__main__":
    main()
