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

Operator attributes by type (`core.sharding.catalog`): MatMul/BatchMatMul `transpose_a`/`transpose_b`,
Transpose `perm`, Reshape `shape`, Softmax `axis`, RMSNorm `eps`. Tensors may say `"role": "input" |
"weight"` (default: `Design.tensor_role`). The design may say `"loss": "mse" | "cross_entropy"` and
`"repeat": {"count", "first", "last", "carry"}` (one layer repeated; see `RepeatSpec`). A design the Planner
made carries `"planner_recipe": {"dp", "mp", "pp", "micro_batches", "micro_batch_size", "sp", "optimizer_shard",
"recompute"}` (`PlannerRecipe`): the recipe its run's plan is computed from (core.plan.planned).

The types live in `design_types.py`, the reader in `design_reader.py`; this module is the public face
(it re-exports the types), the writer, the consistency checks and the file functions.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from core.files import open_checked, write_replacing
from core.sharding.design_reader import read_design
from core.sharding.design_types import (
    FLOAT_DTYPES,
    FORMAT_KEY,
    FORMAT_VERSION,
    LOSSES,
    MAX_AXES,
    MAX_DEPTH,
    MAX_DESIGN_BYTES,
    MAX_DEVICES,
    MAX_DIMS,
    MAX_LAYOUTS,
    MAX_NUMBER_CHARS,
    MAX_OPERATORS,
    MAX_PROBLEMS,
    MAX_REPEAT,
    MAX_STRING,
    MAX_TENSORS,
    ROLES,
    Design,
    DesignError,
    LayoutSpec,
    OperatorSpec,
    PlannerRecipe,
    Problem,
    RepeatSpec,
    Sharding,
    TensorSpec,
)
from core.sharding.layout import NONE, DimEntry, Layout, LayoutError

__all__ = [
    "FLOAT_DTYPES",
    "FORMAT_KEY",
    "FORMAT_VERSION",
    "LOSSES",
    "MAX_AXES",
    "MAX_DEPTH",
    "MAX_DESIGN_BYTES",
    "MAX_DEVICES",
    "MAX_DIMS",
    "MAX_LAYOUTS",
    "MAX_NUMBER_CHARS",
    "MAX_OPERATORS",
    "MAX_PROBLEMS",
    "MAX_REPEAT",
    "MAX_STRING",
    "MAX_TENSORS",
    "ROLES",
    "Design",
    "DesignError",
    "LayoutSpec",
    "OperatorSpec",
    "PlannerRecipe",
    "Problem",
    "RepeatSpec",
    "Sharding",
    "TensorSpec",
    "design_from_dict",
    "design_problems",
    "design_to_dict",
    "dumps_design",
    "entry_label",
    "load_design",
    "loads_design",
    "save_design",
]


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
        if tensor.role is not None:
            t["role"] = tensor.role
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
        for attr in ("perm", "shape"):
            if getattr(op, attr) is not None:
                o[attr] = list(getattr(op, attr))
        for attr in ("axis", "eps"):
            if getattr(op, attr) is not None:
                o[attr] = getattr(op, attr)
        operators.append(o)
    result: dict[str, Any] = {
        FORMAT_KEY: FORMAT_VERSION,
        "name": design.name,
        "description": design.description,
        "device_num": design.device_num,
        "layouts": layouts,
        "tensors": tensors,
        "operators": operators,
    }
    if design.loss != "mse":
        result["loss"] = design.loss
    if design.repeat is not None:
        r = design.repeat
        result["repeat"] = {"count": r.count, "first": r.first, "last": r.last, "carry": r.carry}
    if design.planner_recipe is not None:
        result["planner_recipe"] = asdict(design.planner_recipe)
    return result


def design_from_dict(data: Any, strict: bool = True) -> Design:
    """Build a Design from parsed JSON. Raises DesignError listing every problem.

    With strict=True the design must also be consistent (see `design_problems`).
    """
    design = read_design(data)
    if strict:
        problems = design_problems(design)
        if problems:
            raise DesignError(problems)
    return design


def design_problems(design: Design) -> list[Problem]:
    """Consistency checks the editor shows live: references, device counts, ranks and divisibility."""
    problems: list[Problem] = []
    built: dict[str, Layout] = {}  # each layout built once, not once per tensor (65,536 ranks x 4,096 tensors)
    for name, spec in design.layouts.items():
        try:
            built[name] = spec.build()
            built[name].check_device_num(design.device_num)
        except LayoutError as exc:
            problems.append(Problem(f"$.layouts.{name}", str(exc)))
    op_names = {op.name for op in design.operators}  # built once: 4,096 tensors x 4,096 operators is 16 M
    for name, tensor in design.tensors.items():
        if name in op_names:
            problems.append(Problem(f"$.tensors.{name}", f"{name!r} is both a tensor and an operator name"))
        if tensor.sharding is not None:
            problems.extend(_sharding_problems(design, built, tensor.sharding, tensor.shape, f"$.tensors.{name}", name))
    known = set(design.tensors)
    earlier: set[str] = set()  # names of operators seen so far: one set, not a rebuilt one per operator
    for i, op in enumerate(design.operators):
        path = f"$.operators[{i}]"
        for j, source in enumerate(op.inputs):
            if source not in known:
                problems.append(Problem(f"{path}.inputs[{j}]", f"{source!r} is not a tensor or an earlier operator"))
        if op.name in earlier:
            problems.append(Problem(f"{path}.name", f"operator name {op.name!r} is used twice"))
        earlier.add(op.name)
        for j, sharding in enumerate(op.strategy or ()):
            if sharding.is_layout:
                problems.extend(_sharding_problems(design, built, sharding, None, f"{path}.strategy[{j}]", op.name))
        if op.out_strategy is not None:
            out_path = f"{path}.out_strategy[0]"
            problems.extend(_sharding_problems(design, built, op.out_strategy, None, out_path, op.name))
        known.add(op.name)
    problems.extend(_repeat_problems(design))
    return problems


def _repeat_problems(design: Design) -> list[Problem]:
    """The repeat block must name operators in order, and carry something defined before the block."""
    repeat = design.repeat
    if repeat is None:
        return []
    names = [op.name for op in design.operators]
    problems = [
        Problem(f"$.repeat.{key}", f"{value!r} is not an operator of this design: name the block's {key} operator")
        for key, value in (("first", repeat.first), ("last", repeat.last))
        if value not in names
    ]
    if problems:
        return problems
    first, last = names.index(repeat.first), names.index(repeat.last)
    if first > last:
        return [
            Problem(
                "$.repeat.last",
                f"{repeat.last!r} comes before {repeat.first!r}: the block runs from first to last in operator order",
            )
        ]
    if repeat.carry not in design.tensors and repeat.carry not in names[:first]:
        return [
            Problem(
                "$.repeat.carry",
                f"{repeat.carry!r} must be a tensor or an operator before the block ({repeat.first!r}): it is what "
                "layer 1 reads and what every later layer replaces with the previous layer's output",
            )
        ]
    return []


def _sharding_problems(
    design: Design,
    built: dict[str, Layout],
    sharding: Sharding,
    shape: tuple[int, ...] | None,
    path: str,
    owner: str,
) -> list[Problem]:
    try:
        if sharding.is_layout:
            layout = built.get(sharding.layout or "")
            tensor_layout = (layout or design.layout(sharding.layout or ""))(*(sharding.map or ()))
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
class _NumberTooLong(ValueError):
    """Raised from inside json.loads: a number literal longer than MAX_NUMBER_CHARS."""

    def __init__(self, literal: str) -> None:
        super().__init__(literal)
        self.literal = literal


def _parse_int(literal: str) -> int:
    # refused before int() runs: int() of a 5,000-digit string is quadratic and, past 4,300 digits, a ValueError
    if len(literal) > MAX_NUMBER_CHARS:
        raise _NumberTooLong(literal)
    return int(literal)


def _parse_float(literal: str) -> float:
    if len(literal) > MAX_NUMBER_CHARS:
        raise _NumberTooLong(literal)
    return float(literal)


def _parse_constant(literal: str) -> float:
    raise json.JSONDecodeError(f"{literal} is not a JSON number", literal, 0)


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_INNERMOST = re.compile(r"\[\]|\{\}")
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEEP_MESSAGE = f"the JSON nests deeper than {MAX_DEPTH} levels (a design needs 7)"
_DEEP_RUN = re.compile(r"[\[{]" + f"{{{MAX_DEPTH + 1}}}")  # more openers in a row than MAX_DEPTH


def _too_deep(text: str) -> bool:
    """True when brackets nest deeper than MAX_DEPTH, found without recursion (json.loads would recurse).

    Strings are dropped, then each pass of a C-speed regex removes the innermost bracket pairs: after
    MAX_DEPTH passes a file nested no deeper than that is empty. Brackets that do not pair up also
    remain; those files are not JSON, and json.loads says where (so only a file whose brackets *are*
    balanced, or that goes deeper than MAX_DEPTH before going wrong, is called too deep).
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for _ in range(MAX_DEPTH):
        if not brackets:
            return False
        shorter = _INNERMOST.sub("", brackets)
        if shorter == brackets:  # nothing pairs up: a syntax error for json.loads, unless it opens too deep
            return _DEEP_RUN.search(brackets) is not None
        brackets = shorter
    return bool(brackets)


def _position(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    return f"line {line}, column {index - (text.rfind(chr(10), 0, index) + 1) + 1}"


def _too_big(size: int) -> DesignError:
    return DesignError(
        [Problem("$", f"the file is {size:,} bytes: a design file may be at most {MAX_DESIGN_BYTES:,} bytes")]
    )


def loads_design(text: str | bytes, strict: bool = True) -> Design:
    """Parse and check a design; every failure, however hostile the input, is a DesignError.

    The limits (README "Limits") are checked before the work they bound: size before parsing, depth
    before json.loads recurses, number length while parsing, counts before the reader walks a list.
    """
    if len(text) > MAX_DESIGN_BYTES:
        raise _too_big(len(text))
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode(json.detect_encoding(text), "surrogatepass")
        except UnicodeDecodeError:
            raise DesignError([Problem("$", "not valid JSON: the file is not UTF-8 text")]) from None
    if _too_deep(text):
        raise DesignError([Problem("$", _DEEP_MESSAGE)])
    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except _NumberTooLong as exc:
        where = _position(text, max(text.find(exc.literal), 0))
        message = f"a number of {len(exc.literal):,} characters at {where}: at most {MAX_NUMBER_CHARS} are allowed"
        raise DesignError([Problem("$", message)]) from None
    except json.JSONDecodeError as exc:
        message = f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        raise DesignError([Problem("$", message)]) from None
    except RecursionError:  # the pre-scan should make this unreachable; kept so no traceback can escape
        raise DesignError([Problem("$", _DEEP_MESSAGE)]) from None
    return design_from_dict(data, strict=strict)


def load_design(path: str | Path, strict: bool = True) -> Design:
    """Read a design file; the size is checked (stat, then a bounded read) before a byte is parsed, and
    a FIFO, device, socket or folder is refused before it is opened (one could block or never end)."""
    path = Path(path)
    try:
        with open_checked(path, None, "design file") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_DESIGN_BYTES:
                raise _too_big(size)
            text = handle.read(MAX_DESIGN_BYTES + 1)  # a file that grew (or a pipe) still stops here
    except OSError as exc:
        raise DesignError([Problem("$", f"cannot read {path}: {exc.strerror or exc}")]) from None
    return loads_design(text, strict=strict)


def dumps_design(design: Design) -> str:
    return json.dumps(design_to_dict(design), indent=2) + "\n"


def save_design(design: Design, path: str | Path) -> Path:
    """Write atomically (a fresh temp file + rename) so a crash never leaves half a design, and a link
    planted at the path (or at a predictable temp name) is replaced, never written through."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_replacing(path, dumps_design(design).encode("utf-8"))


def entry_label(entry: DimEntry) -> str:
    """How a dimension's entry reads in tables: `dp`, `(sp, dp)` or `None`."""
    if isinstance(entry, tuple):
        return "(" + ", ".join(entry) + ")"
    return entry if entry != NONE else "None"
