"""The legacy rank-table launch (Ascend): run.sh loops over the node's cards, one process per card."""

from __future__ import annotations

from dataclasses import dataclass

from core.codegen.common import lit
from core.codegen.launchers.base import JobLauncher, node_rank_lines
from core.codegen.options import RunOptions


@dataclass(frozen=True)
class RankTable(JobLauncher):
    def check(self, options: RunOptions) -> str | None:
        if options.device_target != "Ascend":
            return (
                "the rank-table launch is Ascend-only (the rank table describes HCCL devices): "
                "use msrun or mpirun for GPU/CPU"
            )
        return None

    def log_pattern(self, options: RunOptions) -> str:
        return "device<rank>/train.log<rank>"

    def log_dir(self, options: RunOptions) -> str:
        return "."

    def body_lines(self, options: RunOptions) -> list[str]:
        lines = node_rank_lines() if options.multi_node else ["NODE_RANK=0"]
        return [
            *lines,
            "# The rank table lists every card's IP (see README); generate it with MindSpore's hccl_tools.py.",
            'export RANK_TABLE_FILE="${RANK_TABLE_FILE:-$PWD/rank_table.json}"',
            'if [ ! -f "$RANK_TABLE_FILE" ]; then echo "rank table $RANK_TABLE_FILE not found" >&2; exit 2; fi',
            f"export RANK_SIZE={options.device_num}",
            f"LOCAL_SIZE={options.workers_per_node}",
            "pids=()",
            "for ((i = 0; i < LOCAL_SIZE; i++)); do",
            "  rank=$((NODE_RANK * LOCAL_SIZE + i))",
            '  rm -rf "device$rank"',
            '  mkdir "device$rank"',
            '  cp train.py "device$rank/"',
            '  echo "start training for rank $rank on device $i"',
            '  (cd "device$rank" && DEVICE_ID=$i RANK_ID=$rank exec python train.py > "train.log$rank" 2>&1) &',
            '  pids+=("$!")',
            "done",
            "status=0",
            'for pid in "${pids[@]}"; do',
            '  wait "$pid" || status=1',
            "done",
            'exit "$status"',
        ]

    def readme_command(self, options: RunOptions) -> list[str]:
        return ["# per card i: DEVICE_ID=i RANK_ID=<rank> python train.py > device<rank>/train.log<rank>"]

    def readme_notes(self, options: RunOptions) -> list[str]:
        return [
            "Rank table: put the cluster's `rank_table.json` (device IPs from `/etc/hccn.conf`) next to `run.sh` "
            "or set `RANK_TABLE_FILE`.",
            "",
        ]

    def device_lines(self, options: RunOptions) -> list[str]:
        return [
            "    # rank-table launch: run.sh exports DEVICE_ID (the card on this server) for every process",
            f'    ms.set_device({lit(options.device_target)}, int(os.environ["DEVICE_ID"]))',
        ]


LAUNCHER = RankTable("rank_table", "rank table (Ascend)", own_scripts=False)
