"""The design file: the single source of truth the editor edits, previews read, codegen renders.

A design is JSON (see README "Design file"):

    {"shardscope_design": 1, "name": "seed004_mlp", "description": "...", "device_num": 8,
     "layouts": {"layout": {"device_matrix": [2, 2, 2], "alias_name": ["dp", "sp", "mp"]}},
     "tensors": {"x": {"shape": [2, 4], "dtype": "float32", "layout": "layout",
                       "map": ["mp", ["sp", "dp"]]}},
     "operators": [{"name": "matmul1", "type": "MatMul", "inputs": ["x", "w"],
                    "strategy": [{"layout": "layout", "map": ["mp", ["sp", "dp"]]},
                                 {"layout": "layout", "map": [["sp", "dp"], "None"]}]},
                   {"name": "relu1", "type": "ReLU", "inputs": ["matmul1"], "strategy": [[4, 1]]}]}

An operator input names a tensor or an earlier operator (its output). A strategy entry is either a
Layout strategy `{"layout": NAME, "map": [...]}` or a tuple strategy `[4, 1]`; an optional
`out_strategy` (one Layout strategy) is MindSpore's `shard(in_strategy, out_strategy)`. Loading collects every
problem with the JSON path of the bad field (`$.tensors.x.shape[1]`) instead of stopping at the first.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from core.sharding.catalog import OP_ARITY
from core.sharding.layout import INTERLEAVED, NONE, DimEntry, Layout, LayoutError, TensorLayout
from core.sharding.placement import DTYPE_BYTES
from core.workspace import WorkspaceError, check_name

FORMAT_KEY = "shardscope_design"
FORMAT_VERSION = 1
MAX_DIMS = 8
MAX_DEVICES = 1 << 16

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class DesignError(ValueError):
    """A design file that cannot be used; `problems` lists (json_path, message) for every fault."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = [f"{p.path}: {p.message}" for p in problems]
        joined = "\n  ".join(lines)
        super().__init__(f"invalid design:\n  {joined}" if len(lines) > 1 else f"invalid design: {joined}")


@dataclass(frozen=True)
class Problem:
    path: str
    message: str


@dataclass(frozen=True)
class LayoutSpec:
    device_matrix: tuple[int, ...]
    alias_name: tuple[str, ...]
    rank_list: tuple[int, ...] | None = None

    def build(self) -> Layout:
        return Layout(self.device_matrix, self.alias_name, None if self.rank_list is None else list(self.rank_list))


@dataclass(frozen=True)
class Sharding:
    """How one tensor or operator input is split: a Layout strategy or a tuple strategy."""

    layout: str | None = None
    map: tuple[DimEntry, ...] | None = None
    split: tuple[int, ...] | None = None

    @property
    def is_layout(self) -> bool:
        return self.layout is not None


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: str = "float32"
    sharding: Sharding | None = None


@dataclass(frozen=True)
class OperatorSpec:
    name: str
    type: str
    inputs: tuple[str, ...]
    strategy: tuple[Sharding, ...] | None = None
    out_strategy: Sharding | None = None  # MindSpore's out_strategy (a Layout): e.g. ReduceScatter output
    transpose_a: bool = False
    transpose_b: bool = False


@dataclass(frozen=True)
class Design:
    name: str = "untitled"
    description: str = ""
    device_num: int = 8
    layouts: Mapping[str, LayoutSpec] = field(default_factory=dict)
    tensors: Mapping[str, TensorSpec] = field(default_factory=dict)
    operators: tuple[OperatorSpec, ...] = ()

    # -- lookups used by previews, operators and codegen -------------------------------------
    def layout(self, name: str) -> Layout:
        if name not in self.layouts:
            raise LayoutError(f"no layout called {name!r}; define it under 'layouts'")
        return self.layouts[name].build()

    def tensor_layout(self, sharding: Sharding) -> TensorLayout:
        """The TensorLayout of a Layout strategy (tuple strategies have none until an operator places them)."""
        if sharding.layout is None or sharding.map is None:
            raise LayoutError("this strategy is a tuple strategy, not a Layout strategy")
        return self.layout(sharding.layout)(*sharding.map)

    def operator(self, name: str) -> OperatorSpec:
        for op in self.operators:
            if op.name == name:
                return op
        raise KeyError(name)

    def with_tensor(self, name: str, spec: TensorSpec) -> Design:
        return replace(self, tensors={**self.tensors, name: spec})

    def with_layout(self, name: str, spec: LayoutSpec) -> Design:
        return replace(self, layouts={**self.layouts, name: spec})


# ---------------------------------------------------------------------------------------------
# dict <-> Design
# ---------------------------------------------------------------------------------------------
def _entry_to_json(entry: DimEntry) -> Any:
    return list(entry) if isinstance(entry, tuple) else entry


def _sharding_to_json(sharding: Sharding) -> Any:
    if sharding.is_layout:
        return {"layout": sharding.layout, "map": [_entry_to_json(e) for e in sharding.map or ()]}
    return list(sharding.split or ())


def design_to_dict(design: Design) -> dict[str, Any]:
    """The JSON-ready form (lists, not tuples); `design_from_dict` inverts it."""
    layouts: dict[str, Any] = {}
    for name, spec in design.layouts.items():
        entry: dict[str, Any] = {"device_matrix": list(spec.device_matrix), "alias_name": list(spec.alias_name)}
        if spec.rank_list is not None:
            entry["rank_list"] = list(spec.rank_list)
        layouts[name] = entry
    tensors: dict[str, Any] = {}
    for name, tensor in design.tensors.items():
        t: dict[str, Any] = {"shape": list(tensor.shape), "dtype": tensor.dtype}
        if tensor.sharding is not None:
            sharding = _sharding_to_json(tensor.sharding)
            if isinstance(sharding, dict):
                t.update(sharding)
            else:
                t["split"] = sharding
        tensors[name] = t
    operators: list[dict[str, Any]] = []
    for op in design.operators:
        o: dict[str, Any] = {"name": op.name, "type": op.type, "inputs": list(op.inputs)}
        if op.strategy is not None:
            o["strategy"] = [_sharding_to_json(s) for s in op.strategy]
        if op.out_strategy is not None:
            o["out_strategy"] = [_sharding_to_json(op.out_strategy)]
        if op.transpose_a:
            o["transpose_a"] = True
        if op.transpose_b:
            o["transpose_b"] = True
        operators.append(o)
    return {
        FORMAT_KEY: FORMAT_VERSION,
        "name": design.name,
        "description": design.description,
        "device_num": design.device_num,
        "layouts": layouts,
        "tensors": tensors,
        "operators": operators,
    }


class _Reader:
    """Walks untrusted JSON, recording every problem with its path instead of raising at the first."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def fail(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def int_(self, value: Any, path: str, minimum: int = 1, maximum: int = MAX_DEVICES * 1024) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"expected a whole number, got {json.dumps(value)}")
            return None
        if not minimum <= value <= maximum:
            self.fail(path, f"{value} is out of range: use {minimum}..{maximum}")
            return None
        return value

    def identifier(self, value: Any, path: str, what: str) -> str | None:
        if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value) or keyword.iskeyword(value):
            self.fail(
                path,
                f"{what} {json.dumps(value)} is not allowed: use a Python identifier "
                "(letters, digits, '_', not starting with a digit, at most 64 characters)",
            )
            return None
        return value

    def list_(self, value: Any, path: str, what: str) -> list[Any] | None:
        if not isinstance(value, list):
            self.fail(path, f"{what} must be a JSON list, got {json.dumps(value)[:60]}")
            return None
        return value

    def object_(self, value: Any, path: str, what: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.fail(path, f"{what} must be a JSON object, got {json.dumps(value)[:60]}")
            return None
        return value

    def unknown_keys(self, obj: dict[str, Any], allowed: set[str], path: str) -> None:
        for key in obj:
            if key not in allowed:
                self.fail(f"{path}.{key}", f"unknown field {key!r}; allowed: {', '.join(sorted(allowed))}")

    # -- pieces --------------------------------------------------------------------------------
    def layout_spec(self, value: Any, path: str) -> LayoutSpec | None:
        obj = self.object_(value, path, "a layout")
        if obj is None:
            return None
        self.unknown_keys(obj, {"device_matrix", "alias_name", "rank_list"}, path)
        sizes = self.list_(obj.get("device_matrix"), f"{path}.device_matrix", "device_matrix")
        names = self.list_(obj.get("alias_name"), f"{path}.alias_name", "alias_name")
        ok = sizes is not None and names is not None
        matrix = [self.int_(s, f"{path}.device_matrix[{i}]", 1, MAX_DEVICES) for i, s in enumerate(sizes or [])]
        aliases = [
            a if a == INTERLEAVED else self.identifier(a, f"{path}.alias_name[{i}]", "axis name")
            for i, a in enumerate(names or [])
        ]
        ranks: list[int | None] | None = None
        if obj.get("rank_list") is not None:
            raw = self.list_(obj["rank_list"], f"{path}.rank_list", "rank_list")
            ranks = [self.int_(r, f"{path}.rank_list[{i}]", 0, MAX_DEVICES * 1024) for i, r in enumerate(raw or [])]
            ok = ok and raw is not None
        if not ok or None in matrix or None in aliases or (ranks is not None and None in ranks):
            return None
        spec = LayoutSpec(
            tuple(matrix),  # type: ignore[arg-type]
            tuple(aliases),  # type: ignore[arg-type]
            None if ranks is None else tuple(ranks),  # type: ignore[arg-type]
        )
        try:
            spec.build()
        except LayoutError as exc:
            self.fail(path, str(exc))
            return None
        return spec

    def entry(self, value: Any, path: str) -> DimEntry | None:
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return tuple(value)
        self.fail(path, f"expected an axis name, 'None' or a list of axis names, got {json.dumps(value)}")
        return None

    def sharding(self, value: Any, path: str) -> Sharding | None:
        if isinstance(value, list):
            split = [self.int_(s, f"{path}[{i}]", 1, MAX_DEVICES) for i, s in enumerate(value)]
            return None if None in split else Sharding(split=tuple(split))  # type: ignore[arg-type]
        obj = self.object_(value, path, "a strategy (a list of split counts or {layout, map})")
        if obj is None:
            return None
        self.unknown_keys(obj, {"layout", "map"}, path)
        layout = self.identifier(obj.get("layout"), f"{path}.layout", "layout name")
        raw = self.list_(obj.get("map"), f"{path}.map", "map")
        entries = [self.entry(e, f"{path}.map[{i}]") for i, e in enumerate(raw or [])]
        if layout is None or raw is None or None in entries:
            return None
        return Sharding(layout=layout, map=tuple(entries))  # type: ignore[arg-type]

    def tensor(self, value: Any, path: str) -> TensorSpec | None:
        obj = self.object_(value, path, "a tensor")
        if obj is None:
            return None
        self.unknown_keys(obj, {"shape", "dtype", "layout", "map", "split"}, path)
        raw = self.list_(obj.get("shape"), f"{path}.shape", "shape")
        if raw is not None and len(raw) > MAX_DIMS:
            self.fail(f"{path}.shape", f"{len(raw)} dimensions: at most {MAX_DIMS} are supported")
        shape = [self.int_(s, f"{path}.shape[{i}]", 1, 1 << 40) for i, s in enumerate(raw or [])]
        dtype = obj.get("dtype", "float32")
        if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
            self.fail(f"{path}.dtype", f"unknown dtype {json.dumps(dtype)}: use one of {', '.join(DTYPE_BYTES)}")
        sharding: Sharding | None = None
        if "layout" in obj or "map" in obj:
            sharding = self.sharding({"layout": obj.get("layout"), "map": obj.get("map")}, path)
        elif "split" in obj:
            sharding = self.sharding(self.list_(obj["split"], f"{path}.split", "split"), f"{path}.split")
        if raw is None or None in shape:
            return None
        known_dtype = dtype if isinstance(dtype, str) and dtype in DTYPE_BYTES else "float32"
        return TensorSpec(tuple(shape), known_dtype, sharding)  # type: ignore[arg-type]

    def operator(self, value: Any, path: str) -> OperatorSpec | None:
        obj = self.object_(value, path, "an operator")
        if obj is None:
            return None
        self.unknown_keys(
            obj, {"name", "type", "inputs", "strategy", "out_strategy", "transpose_a", "transpose_b"}, path
        )
        name = self.identifier(obj.get("name"), f"{path}.name", "operator name")
        op_type = obj.get("type")
        if not isinstance(op_type, str) or op_type not in OP_ARITY:
            self.fail(
                f"{path}.type", f"unsupported operator {json.dumps(op_type)}: use one of {', '.join(OP_ARITY)}"
            )
        inputs = self.list_(obj.get("inputs"), f"{path}.inputs", "inputs") or []
        names = [self.identifier(v, f"{path}.inputs[{i}]", "input name") for i, v in enumerate(inputs)]
        known_type = isinstance(op_type, str) and op_type in OP_ARITY
        if known_type and len(inputs) != OP_ARITY[op_type]:
            self.fail(f"{path}.inputs", f"{op_type} takes {OP_ARITY[op_type]} input(s), got {len(inputs)}")
        strategy: list[Sharding | None] | None = None
        if obj.get("strategy") is not None:
            raw = self.list_(obj["strategy"], f"{path}.strategy", "strategy") or []
            strategy = [self.sharding(s, f"{path}.strategy[{i}]") for i, s in enumerate(raw)]
            if len(raw) != len(inputs):
                self.fail(
                    f"{path}.strategy", f"give one strategy per input: {len(inputs)} inputs, {len(raw)} given"
                )
        out_strategy: Sharding | None = None
        out_ok = True
        if obj.get("out_strategy") is not None:
            raw_out = self.list_(obj["out_strategy"], f"{path}.out_strategy", "out_strategy")
            if raw_out is not None and len(raw_out) != 1:
                self.fail(f"{path}.out_strategy", "give exactly one output strategy (a list with one entry)")
            elif raw_out is not None:
                out_strategy = self.sharding(raw_out[0], f"{path}.out_strategy[0]")
                if out_strategy is not None and not out_strategy.is_layout:
                    self.fail(f"{path}.out_strategy[0]", "an output strategy must be a Layout strategy {layout, map}")
                    out_strategy = None
            out_ok = out_strategy is not None
        flags = {}
        for flag in ("transpose_a", "transpose_b"):
            flags[flag] = obj.get(flag, False)
            if not isinstance(flags[flag], bool):
                self.fail(f"{path}.{flag}", "must be true or false")
        if (
            name is None
            or not known_type
            or not out_ok
            or None in names
            or (strategy is not None and None in strategy)
        ):
            return None
        return OperatorSpec(
            name=name,
            type=op_type,
            inputs=tuple(names),  # type: ignore[arg-type]
            strategy=None if strategy is None else tuple(strategy),  # type: ignore[arg-type]
            out_strategy=out_strategy,
            transpose_a=flags["transpose_a"] is True,
            transpose_b=flags["transpose_b"] is True,
        )


def design_from_dict(data: Any, strict: bool = True) -> Design:
    """Build a Design from parsed JSON. Raises DesignError listing every problem.

    With strict=True the design must also be consistent (see `design_problems`).
    """
    reader = _Reader()
    obj = reader.object_(data, "$", "a design file")
    if obj is None:
        raise DesignError(reader.problems)
    reader.unknown_keys(obj, {FORMAT_KEY, "name", "description", "device_num", "layouts", "tensors", "operators"}, "$")
    version = obj.get(FORMAT_KEY, FORMAT_VERSION)
    if version != FORMAT_VERSION:
        reader.fail(f"$.{FORMAT_KEY}", f"this ShardScope reads design format {FORMAT_VERSION}, got {version!r}")
    name = obj.get("name", "untitled")
    try:
        check_name(name, "design name")
    except WorkspaceError as exc:
        reader.fail("$.name", str(exc))
    description = obj.get("description", "")
    if not isinstance(description, str) or len(description) > 2000:
        reader.fail("$.description", "must be text of at most 2000 characters")
    device_num = reader.int_(obj.get("device_num", 8), "$.device_num", 1, MAX_DEVICES)
    layouts: dict[str, LayoutSpec] = {}
    for key, value in (reader.object_(obj.get("layouts", {}), "$.layouts", "layouts") or {}).items():
        if reader.identifier(key, f"$.layouts.{key}", "layout name") is not None:
            spec = reader.layout_spec(value, f"$.layouts.{key}")
            if spec is not None:
                layouts[key] = spec
    tensors: dict[str, TensorSpec] = {}
    for key, value in (reader.object_(obj.get("tensors", {}), "$.tensors", "tensors") or {}).items():
        if reader.identifier(key, f"$.tensors.{key}", "tensor name") is not None:
            tensor = reader.tensor(value, f"$.tensors.{key}")
            if tensor is not None:
                tensors[key] = tensor
    operators: list[OperatorSpec] = []
    for i, value in enumerate(reader.list_(obj.get("operators", []), "$.operators", "operators") or []):
        op = reader.operator(value, f"$.operators[{i}]")
        if op is not None:
            operators.append(op)
    if reader.problems:
        raise DesignError(reader.problems)
    design = Design(
        name=name,
        description=description,
        device_num=device_num or 8,
        layouts=layouts,
        tensors=tensors,
        operators=tuple(operators),
    )
    if strict:
        problems = design_problems(design)
        if problems:
            raise DesignError(problems)
    return design


def design_problems(design: Design) -> list[Problem]:
    """Consistency checks the editor shows live: references, device counts, ranks and divisibility."""
    problems: list[Problem] = []
    for name, spec in design.layouts.items():
        try:
            spec.build().check_device_num(design.device_num)
        except LayoutError as exc:
            problems.append(Problem(f"$.layouts.{name}", str(exc)))
    for name, tensor in design.tensors.items():
        if name in {op.name for op in design.operators}:
            problems.append(Problem(f"$.tensors.{name}", f"{name!r} is both a tensor and an operator name"))
        if tensor.sharding is not None:
            problems.extend(_sharding_problems(design, tensor.sharding, tensor.shape, f"$.tensors.{name}", name))
    known = set(design.tensors)
    for i, op in enumerate(design.operators):
        path = f"$.operators[{i}]"
        for j, source in enumerate(op.inputs):
            if source not in known:
                problems.append(
                    Problem(f"{path}.inputs[{j}]", f"{source!r} is not a tensor or an earlier operator")
                )
        if op.name in {o.name for o in design.operators[:i]}:
            problems.append(Problem(f"{path}.name", f"operator name {op.name!r} is used twice"))
        for j, sharding in enumerate(op.strategy or ()):
            if sharding.is_layout:
                problems.extend(_sharding_problems(design, sharding, None, f"{path}.strategy[{j}]", op.name))
        if op.out_strategy is not None:
            problems.extend(_sharding_problems(design, op.out_strategy, None, f"{path}.out_strategy[0]", op.name))
        known.add(op.name)
    return problems


def _sharding_problems(
    design: Design, sharding: Sharding, shape: tuple[int, ...] | None, path: str, owner: str
) -> list[Problem]:
    try:
        if sharding.is_layout:
            tensor_layout = design.tensor_layout(sharding)
            if shape is not None:
                tensor_layout.check_shape(shape, owner)
        elif shape is not None:
            split = sharding.split or ()
            if len(split) != len(shape):
                raise LayoutError(f"{owner} has {len(shape)} dimensions but its split has {len(split)} entries")
            for dim, (size, pieces) in enumerate(zip(shape, split, strict=True)):
                if size % pieces:
                    raise LayoutError(f"{owner} dimension {dim} has size {size}, not divisible by {pieces}")
    except LayoutError as exc:
        return [Problem(path, str(exc))]
    return []


# ---------------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------------
def loads_design(text: str | bytes, strict: bool = True) -> Design:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        message = f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        raise DesignError([Problem("$", message)]) from None
    except UnicodeDecodeError:
        raise DesignError([Problem("$", "not valid JSON: the file is not UTF-8 text")]) from None
    return design_from_dict(data, strict=strict)


def load_design(path: str | Path, strict: bool = True) -> Design:
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise DesignError([Problem("$", f"cannot read {path}: {exc.strerror}")]) from None
    return loads_design(text, strict=strict)


def dumps_design(design: Design) -> str:
    return json.dumps(design_to_dict(design), indent=2) + "\n"


def save_design(design: Design, path: str | Path) -> Path:
    """Write atomically (temp file + rename) so a crash never leaves half a design."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(dumps_design(design), encoding="utf-8")
    tmp.replace(path)
    return path


def entry_label(entry: DimEntry) -> str:
    """How a dimension's entry reads in tables: `dp`, `(sp, dp)` or `None`."""
    if isinstance(entry, tuple):
        return "(" + ", ".join(entry) + ")"
    return entry if entry != NONE else "None"
