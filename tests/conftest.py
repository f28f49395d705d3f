"""Shared fixtures. Append new fixtures; do not rewrite the ones above.

`slurm_cluster`: a real throw-away two-node Slurm cluster on loopback (scripts/slurm_cluster.sh),
torn down after the session. `netns_node`: a network namespace joined to the host by a veth pair
(10.231.0.1 <-> 10.231.0.2), so a second msrun "node" does not see the host's addresses.
Both need root and Debian's packages; without them the tests that use them are skipped.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.browser import free_port

REPO = Path(__file__).resolve().parents[1]

# No property test has a deadline: hypothesis' default (200 ms an example) is a timed assertion, and on
# a machine with every core busy it failed a host-check property test whose examples take microseconds.
settings.register_profile("shardscope", deadline=None)
settings.load_profile("shardscope")


@dataclass(frozen=True)
class SlurmCluster:
    root: Path
    conf: Path
    partition: str = "debug"


def _slurm_missing() -> str:
    if os.geteuid() != 0:
        return "needs root (slurmd, munged)"
    missing = [
        t
        for t in ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "sinfo", "scancel")
        if shutil.which(t) is None
    ]
    if missing:
        return f"not installed: {', '.join(missing)} (apt-get install munge slurmctld slurmd slurm-client)"
    return ""


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """Start munged + slurmctld + slurmd n1/n2 under a temp dir; SLURM_CONF points at it for the session."""
    why = _slurm_missing()
    if why:
        pytest.skip(f"Slurm cluster: {why}")
    root = Path(tempfile.mkdtemp(prefix="shardscope-slurm-"))
    script = str(REPO / "scripts" / "slurm_cluster.sh")
    # free ports, not Slurm's fixed 16817/17101-17102: another Slurm on the machine must not collide
    ports = {"SLURMCTLD_PORT": free_port(), "SLURMD_N1_PORT": free_port(), "SLURMD_N2_PORT": free_port()}
    started = subprocess.run(
        ["bash", script, "start", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **{k: str(v) for k, v in ports.items()}},
    )
    if started.returncode != 0:
        subprocess.run(["bash", script, "stop", str(root)], capture_output=True, timeout=120)
        pytest.fail(f"the test Slurm cluster did not start: {started.stderr}")
    conf = root / "slurm.conf"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SLURM_CONF", str(conf))
        try:
            yield SlurmCluster(root=root, conf=conf)
        finally:
            subprocess.run(["bash", script, "stop", str(root)], capture_output=True, timeout=180)
    shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True)
class NetnsNode:
    name: str
    host_addr: str = "10.231.0.1"
    node_addr: str = "10.231.0.2"

    @property
    def prefix(self) -> list[str]:
        """argv prefix that runs a command inside the namespace."""
        return ["ip", "netns", "exec", self.name]


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


@pytest.fixture
def netns_node() -> Iterator[NetnsNode]:
    """A namespace `ssn2` with veth ssv1 (10.231.0.2) joined to the host's ssv0 (10.231.0.1); removed after."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2")
    node = NetnsNode(name="ssn2")
    if _ip("netns", "list").stdout.split().count(node.name) or _ip("link", "show", "ssv0").returncode == 0:
        pytest.skip("namespace ssn2 / link ssv0 already exist (another test or user owns them)")
    steps = [
        ("link", "add", "ssv0", "type", "veth", "peer", "name", "ssv1"),
        ("netns", "add", node.name),
        ("link", "set", "ssv1", "netns", node.name),
        ("addr", "add", f"{node.host_addr}/24", "dev", "ssv0"),
        ("link", "set", "ssv0", "up"),
        ("-n", node.name, "addr", "add", f"{node.node_addr}/24", "dev", "ssv1"),
        ("-n", node.name, "link", "set", "ssv1", "up"),
        ("-n", node.name, "link", "set", "lo", "up"),
    ]
    try:
        for step in steps:
            result = _ip(*step)
            if result.returncode != 0:
                pytest.skip(f"cannot set up the namespace (ip {' '.join(step)}): {result.stderr.strip()}")
        yield node
    finally:
        _ip("netns", "del", node.name)
        _ip("link", "del", "ssv0")


# Files whose tests start real runs (MindSpore under msrun / mpirun / Slurm, MindFormers) or drive Chromium against a
# served app. Under xdist (scripts/test.sh runs `-n 2 --dist loadfile`) each file runs on one worker (its module
# fixtures set up once: the corpus test's CLI runs ahead of its tests), and these files are one unit, run one after
# another on one worker as without xdist, so two real runs never share the machine's cores.
_REAL_RUN_MARK = re.compile(r"pytest\.mark\.(?:integration|browser)\b")
_OTHERS_NICENESS = 5  # the other tests yield the cores to a real run (CFS: ~1/4 of a core's share when both want it)


@functools.cache
def _real_run_files() -> frozenset[str]:
    """The test files (as node ids start: `tests/test_x.py`) that mark a test integration or browser."""
    here = Path(__file__).resolve().parent
    return frozenset(
        f"{here.name}/{p.name}" for p in here.glob("test_*.py") if _REAL_RUN_MARK.search(p.read_text(encoding="utf-8"))
    )


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile`, with the real-run files as one file (xdist's `loadgroup` marks are lost on pytest 9: it
    renames `item._nodeid`, which pytest 9's node ids no longer read)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class RealRunsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "real runs" if path in _real_run_files() else path

    return RealRunsTogether(config, log)


@pytest.fixture(autouse=True)
def _real_runs_first(request: pytest.FixtureRequest) -> None:
    """Under xdist, a worker runs a real-run file's tests at its usual priority and every other test a little
    lower (what they start inherits it), so a real run keeps the cores it had without xdist and its timeouts keep
    their meaning, while the other tests use the time it waits. Lowering a priority back needs root; elsewhere
    the worker stays lower once it ran another test (slower, never wrong)."""
    if not hasattr(request.config, "workerinput"):
        return
    path = request.node.nodeid.split("::", 1)[0]
    wanted = 0 if path in _real_run_files() else _OTHERS_NICENESS
    try:
        if os.getpriority(os.PRIO_PROCESS, 0) != wanted:
            os.setpriority(os.PRIO_PROCESS, 0, wanted)
    except OSError:
        pass
