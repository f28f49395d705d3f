"""The cards a step time is computed for: peak dense 16-bit compute, memory, link bandwidths, cards per node.

Each preset's figures are public ones, with their source on the line; where a vendor publishes no per-card
figure the comment says what the number is instead. Bandwidths are GB/s (10^9 B/s) one card can send in one
direction: `intra_gbps` inside a node (HCCS / NVLink), `inter_gbps` between nodes (the card's share of the
node's RoCE / InfiniBand ports). A custom card is a JSON file with the same keys (`hardware_from_json`).
"""

from __future__ import annotations

import json
import reprlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from core.files import FileCheckError, read_checked
from core.plan.recipes import PlanError

MAX_HARDWARE_BYTES = 64 * 1024  # a card description is a few hundred bytes
MAX_TFLOPS = 1e6  # 1 EFLOPS per card: beyond any accelerator, a typo
MAX_GBPS = 1e6  # 1 PB/s per card
MAX_CARDS_PER_NODE = 1024
NUMBER_FIELDS = ("peak_tflops", "memory_gb", "intra_gbps", "inter_gbps")


@dataclass(frozen=True)
class Hardware:
    """One kind of card and how its nodes are wired (`to_dict` is its JSON)."""

    name: str
    peak_tflops: float  # dense bf16/fp16 matmul peak, TFLOPS
    memory_gb: float
    intra_gbps: float  # per card, one direction, inside a node
    inter_gbps: float  # per card, one direction, between nodes
    cards_per_node: int
    label: str = ""

    def check(self) -> Hardware:
        """Refuse a figure no time can be computed with, naming the field; returns self."""
        if not isinstance(self.name, str) or not self.name.strip() or len(self.name) > 80:
            raise PlanError(f"hardware name must be a non-empty text of at most 80 characters, got {_short(self.name)}")
        for name in NUMBER_FIELDS:
            value = getattr(self, name)
            top = MAX_TFLOPS if name == "peak_tflops" else MAX_GBPS
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= top:
                raise PlanError(f"hardware {name} must be a number > 0 and at most {top:g}, got {_short(value)}")
        cards = self.cards_per_node
        if isinstance(cards, bool) or not isinstance(cards, int) or not 1 <= cards <= MAX_CARDS_PER_NODE:
            raise PlanError(
                f"hardware cards_per_node must be a whole number from 1 to {MAX_CARDS_PER_NODE}, got {_short(cards)}"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _short(value: object) -> str:
    return reprlib.repr(value)


PRESETS: dict[str, Hardware] = {
    # Ascend 910B in an Atlas 800T A2 server (8 NPUs, 64 GB HBM each: MindFormers' configs/qwen3/README.md @v1.7.0
    # "Atlas 800T A2（64G）… 每台 8 个 NPU"). Peak: 313 TFLOPS fp16 dense is the widely quoted 910B figure (Huawei's
    # docs we hold give no per-SKU number). HCCS: 7 links × 56 GB/s full mesh = 392 GB/s per NPU (Huawei HCCS
    # description of the 910B); between nodes: one 200GE RoCE port per NPU = 25 GB/s (Atlas 800T A2 spec: 8 × 200GE).
    "atlas-800t-a2": Hardware("atlas-800t-a2", 313.0, 64.0, 392.0, 25.0, 8, "Atlas 800T A2 (Ascend 910B, 64 GB)"),
    # Atlas 900 A2 PoDc: the same 8-NPU 910B nodes, liquid-cooled, in a pod; Huawei publishes no separate per-NPU
    # compute or link figure, so the 800T A2 figures are used (MindFormers reports 5-20 % more tokens/s on it).
    "atlas-900-a2-podc": Hardware(
        "atlas-900-a2-podc", 313.0, 64.0, 392.0, 25.0, 8, "Atlas 900 A2 PoDc (Ascend 910B, 64 GB)"
    ),
    # NVIDIA A100 datasheet: 312 TFLOPS bf16 dense, 80 GB; NVLink 3 600 GB/s total = 300 GB/s each way; DGX A100:
    # 8 GPUs, one 200 Gb/s HDR InfiniBand port per GPU = 25 GB/s.
    "a100-80g": Hardware("a100-80g", 312.0, 80.0, 300.0, 25.0, 8, "NVIDIA A100 SXM 80 GB"),
    # NVIDIA H100 SXM datasheet: 989 TFLOPS bf16 dense (1,979 with sparsity), 80 GB; NVLink 4 900 GB/s total =
    # 450 GB/s each way; DGX H100: 8 GPUs, one 400 Gb/s NDR port per GPU = 50 GB/s.
    "h100-sxm": Hardware("h100-sxm", 989.0, 80.0, 450.0, 50.0, 8, "NVIDIA H100 SXM 80 GB"),
    # NVIDIA H200 datasheet: the H100's compute (989 TFLOPS bf16 dense) with 141 GB HBM3e; same NVLink 4 and
    # 400 Gb/s per GPU in HGX H200.
    "h200": Hardware("h200", 989.0, 141.0, 450.0, 50.0, 8, "NVIDIA H200 SXM 141 GB"),
    # A CPU rehearsal (one MindSpore process per "card" on one host): ~0.1 TFLOPS fp32 per process is the order of
    # a few AVX-512 cores; loopback / shared-memory copies ~10 GB/s. Not a public figure: it is for setting a CPU
    # run beside its plan, where the comparison is the point, not the number.
    "cpu": Hardware("cpu", 0.1, 64.0, 10.0, 10.0, 8, "CPU rehearsal (rough, see README)"),
}
DEFAULT_HARDWARE = "atlas-800t-a2"


def hardware_from_dict(data: object, where: str = "hardware") -> Hardware:
    """A Hardware from a JSON object; a one-line PlanError naming the key otherwise."""
    if not isinstance(data, dict):
        raise PlanError(f"{where}: a hardware file is a JSON object, got {type(data).__name__}")
    fields = set(Hardware.__dataclass_fields__)
    unknown = sorted(set(data) - fields)
    if unknown:
        raise PlanError(f"{where}: unknown key {_short(unknown[0])}: use {', '.join(Hardware.__dataclass_fields__)}")
    missing = [k for k in ("name", *NUMBER_FIELDS, "cards_per_node") if k not in data]
    if missing:
        raise PlanError(f"{where}: missing key {missing[0]!r}")
    label = data.get("label", "")
    if not isinstance(label, str) or len(label) > 200:
        raise PlanError(f"{where}: label must be a text of at most 200 characters, got {_short(label)}")
    try:
        return Hardware(**data).check()
    except PlanError as exc:
        raise PlanError(f"{where}: {exc}") from None


def hardware_from_json(path: Path) -> Hardware:
    """A custom card from a JSON file (a regular file of at most 64 KiB)."""
    where = path.name
    try:
        raw = read_checked(path, MAX_HARDWARE_BYTES, "hardware file")
    except FileCheckError as exc:
        raise PlanError(str(exc)) from None
    try:
        data = json.loads(raw.decode("utf-8", errors="replace"), parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise PlanError(f"{where}: not valid JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise PlanError(f"{where}: not valid JSON: nested too deeply") from None
    except ValueError as exc:
        raise PlanError(f"{where}: {exc}") from None
    return hardware_from_dict(data, where)


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a card has")


def resolve_hardware(spec: str) -> Hardware:
    """A preset by name, or a JSON file by path (anything ending in .json or naming an existing file)."""
    if spec in PRESETS:
        return PRESETS[spec]
    path = Path(spec).expanduser()
    if spec.endswith(".json") or path.exists():
        return hardware_from_json(path)
    raise PlanError(f"unknown hardware {_short(spec)}: use one of {', '.join(PRESETS)} or a JSON file")
