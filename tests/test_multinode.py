"""A generated 2-node x 4-worker msrun job as two real nodes on this machine (no Slurm).

msrun makes a node the master whenever `--master_addr` is one of its own addresses, so node 1 runs in
its own network namespace (fixture `netns_node`: veth 10.231.0.1 <-> 10.231.0.2), behind
`ip netns exec`; both nodes write into the same log folder, as on a shared filesystem.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from core.codegen import RunOptions
from core.run.launch import launch, node_plan, stop, wait
from core.run.registry import LaunchError, list_runs
from core.run.states import RunStatus
from core.workspace import REPO_ROOT

MULTI = RunOptions(device_num=8, local_worker_num=4, master_addr="10.231.0.1")


def test_node_plan_starts_node_0_and_the_nodes_given_a_prefix() -> None:
    plan = node_plan(MULTI, {1: ["ip", "netns", "exec", "ssn2"]})
    assert plan == [
        {"node": 0, "argv": ["bash", "run.sh", "0"]},
        {"node": 1, "argv": ["ip", "netns", "exec", "ssn2", "bash", "run.sh", "1"]},
    ]
    assert node_plan(MULTI, None) == []


@pytest.mark.parametrize(
    ("options", "node_exec", "message"),
    [
        (MULTI, {2: ["ssh", "h"]}, "node 2 does not exist"),
        (RunOptions(device_num=8), {1: ["ssh", "h"]}, "multi-node msrun"),
        (MULTI, {1: ["ok", ""]}, "non-empty words"),
    ],
)
def test_bad_node_commands_are_refused(options: RunOptions, node_exec: dict[int, list[str]], message: str) -> None:
    with pytest.raises(LaunchError, match=message):
        node_plan(options, node_exec)


def test_cli_node_exec_is_split_into_words_not_run_by_a_shell() -> None:
    from core.cli.runs import parse_node_exec

    assert parse_node_exec(["1=ip netns exec 'my ns'"]) == {1: ["ip", "netns", "exec", "my ns"]}
    for bad in ["x=ip", "1", "1=unclosed 'quote"]:
        with pytest.raises(LaunchError, match="--node-exec"):
            parse_node_exec([bad])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.integration
def test_two_nodes_one_in_a_network_namespace(netns_node, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from core.logs import read_run

    job, ws = tmp_path / "job", tmp_path / "ws"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "core",
            "generate",
            "--out",
            str(job),
            "--devices",
            "8",
            "--local-workers",
            "4",
            "--master-addr",
            netns_node.host_addr,
            "--master-port",
            str(free_port()),
            "--samples",
            "256",
            "--batch-size",
            "8",
            "--epochs",
            "1",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    try:
        record = launch(job, ws, name="two-nodes", node_exec={1: netns_node.prefix})
        assert record.is_running, record.message
        assert [n["node"] for n in record.nodes] == [0, 1] and all(n["pid"] for n in record.nodes)
        record = wait("two-nodes", ws, timeout=900)
    finally:
        for left in list_runs(ws):
            if left.is_running:
                stop(left.run_id, ws, grace=5)
    assert record.status == RunStatus.SUCCEEDED, record.message
    assert [(n["node"], n["exit_code"]) for n in record.nodes] == [(0, 0), (1, 0)]
    assert record.message == "node 0 exited with code 0, node 1 exited with code 0"
    snapshot = read_run(record.log_dir)
    assert sorted(snapshot.metrics["rank"].unique().tolist()) == list(range(8))
    node1_log = (record.run_dir / "launcher_node1.log").read_text(errors="replace")
    node0_log = (record.run_dir / "launcher_node0.log").read_text(errors="replace")
    assert "Start scheduler" in node0_log and "Start scheduler" not in node1_log  # only node 0 is the master
