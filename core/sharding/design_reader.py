"""Reading a design file: untrusted JSON -> `Design`, every problem recorded with its JSON path.

`core.sharding.design.design_from_dict` calls `read_design` and then, when strict, the consistency
checks; nothing here raises at the first fault, so the editor can show all of them at once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, TypeVar

from core.sharding.catalog import ALL_ATTRIBUTES, OP_ARITY, OP_TYPES
from core.sharding.design_types import (
    FLOAT_DTYPES,
    FORMAT_KEY,
    FORMAT_VERSION,
    LOSSES,
    MAX_AXES,
    MAX_DEVICES,
    MAX_DIMS,
    MAX_LAYOUTS,
    MAX_OPERATORS,
    MAX_PROBLEMS,
    MAX_REPEAT,
    MAX_STRING,
    MAX_TENSORS,
    RECOMPUTE_MODES,
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
from core.sharding.layout import INTERLEAVED, DimEntry, LayoutError
from core.sharding.placement import DTYPE_BYTES
from core.workspace import WorkspaceError, check_name, is_identifier

_OPERATOR_KEYS = {"name", "type", "inputs", "strategy", "out_strategy"}
_DESIGN_KEYS = {
    FORMAT_KEY,
    "name",
    "description",
    "device_num",
    "layouts",
    "tensors",
    "operators",
    "loss",
    "repeat",
    "planner_recipe",
}
_MAX_INPUTS = 16  # more than any operator's arity (2): a longer list is refused before it is walked
_ATTRIBUTE_HELP = {
    "perm": "a permutation of the input's dimensions, e.g. [0, 2, 1, 3]",
    "shape": "the global target shape, e.g. [8, 128, 32, 128]",
}


def _show(value: Any) -> str:
    """A short rendering of any JSON value for a message: never the whole of a 1 MB string or list."""
    if isinstance(value, str):
        return json.dumps(value[:40]) + ("..." if len(value) > 40 else "")
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' * (len(value) != 1)}"
    if isinstance(value, dict):
        return f"an object with {len(value)} field{'s' * (len(value) != 1)}"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**18:
        return f"a {len(str(value)) if value.bit_length() < 10_000 else 'huge'}-digit number"
    if isinstance(value, bool | int | float) or value is None:
        return json.dumps(value)
    return type(value).__name__


_T = TypeVar("_T")


def _whole(items: Sequence[_T | None]) -> tuple[_T, ...] | None:
    """The items as a tuple, or None when one was refused (its problem is already recorded)."""
    kept = tuple(item for item in items if item is not None)
    return kept if len(kept) == len(items) else None


def _key(key: Any) -> str:
    """A field name as it appears in a JSON path, cut short so a 1 MB key cannot fill the message."""
    text = str(key) if isinstance(key, str) else _show(key)
    return text if len(text) <= 64 else text[:40] + "..."


class _Reader:
    """Walks untrusted JSON, recording every problem with its path instead of raising at the first."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.more = 0  # problems past MAX_PROBLEMS: counted, not kept

    def fail(self, path: str, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(path, message))
        else:
            self.more += 1

    def error(self) -> DesignError:
        """Every recorded problem, plus one line counting those past the cap."""
        extra = [Problem("$", f"... and {self.more:,} more problems")] if self.more else []
        return DesignError(self.problems + extra)

    def int_(self, value: Any, path: str, minimum: int = 1, maximum: int = MAX_DEVICES * 1024) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"expected a whole number, got {_show(value)}")
            return None
        if not minimum <= value <= maximum:
            self.fail(path, f"{_show(value)} is out of range: use {minimum}..{maximum}")
            return None
        return value

    def identifier(self, value: Any, path: str, what: str) -> str | None:
        if not is_identifier(value):
            self.fail(
                path,
                f"{what} {_show(value)} is not allowed: use a Python identifier "
                "(letters, digits, '_', not starting with a digit, at most 64 characters)",
            )
            return None
        return value

    def list_(self, value: Any, path: str, what: str, limit: int | None = None) -> list[Any] | None:
        """The list, or None with the problem recorded; a list longer than `limit` is refused unread."""
        if not isinstance(value, list):
            self.fail(path, f"{what} must be a JSON list, got {_show(value)}")
            return None
        if limit is not None and len(value) > limit:
            self.fail(path, f"{what} has {len(value):,} entries: at most {limit:,} are supported")
            return None
        return value

    def object_(self, value: Any, path: str, what: str, limit: int | None = None) -> dict[str, Any] | None:
        """The object, or None with the problem recorded; more than `limit` fields are refused unread."""
        if not isinstance(value, dict):
            self.fail(path, f"{what} must be a JSON object, got {_show(value)}")
            return None
        if limit is not None and len(value) > limit:
            self.fail(path, f"{what} has {len(value):,} entries: at most {limit:,} are supported")
            return None
        return value

    def unknown_keys(self, obj: dict[str, Any], allowed: set[str], path: str) -> None:
        for key in obj:
            if key not in allowed:
                self.fail(f"{path}.{_key(key)}", f"unknown field {_key(key)!r}; allowed: {', '.join(sorted(allowed))}")

    # -- pieces --------------------------------------------------------------------------------
    def layout_spec(self, value: Any, path: str) -> LayoutSpec | None:
        obj = self.object_(value, path, "a layout")
        if obj is None:
            return None
        self.unknown_keys(obj, {"device_matrix", "alias_name", "rank_list"}, path)
        sizes = self.list_(obj.get("device_matrix"), f"{path}.device_matrix", "device_matrix", MAX_AXES)
        names = self.list_(obj.get("alias_name"), f"{path}.alias_name", "alias_name", MAX_AXES)
        ok = sizes is not None and names is not None
        matrix = [self.int_(s, f"{path}.device_matrix[{i}]", 1, MAX_DEVICES) for i, s in enumerate(sizes or [])]
        aliases = [
            a if a == INTERLEAVED else self.identifier(a, f"{path}.alias_name[{i}]", "axis name")
            for i, a in enumerate(names or [])
        ]
        positions = math.prod(m for m in matrix if m is not None)
        if ok and positions > MAX_DEVICES:  # before any Layout builds its rank list
            self.fail(
                f"{path}.device_matrix",
                f"the axis sizes multiply to {positions:,} devices: at most {MAX_DEVICES:,} are supported",
            )
            ok = False
        ranks: list[int | None] | None = None
        if obj.get("rank_list") is not None:
            raw = self.list_(obj["rank_list"], f"{path}.rank_list", "rank_list", MAX_DEVICES)
            if ok and raw is not None and None not in matrix and len(raw) != positions:
                self.fail(
                    path,  # the layout's path, as when Layout itself finds the mismatch
                    f"rank_list has {len(raw):,} ranks but the device matrix has {positions:,} positions: "
                    "give one rank per position",
                )
                raw = None
            ranks = [self.int_(r, f"{path}.rank_list[{i}]", 0, MAX_DEVICES * 1024) for i, r in enumerate(raw or [])]
            ok = ok and raw is not None
        axis_sizes, axis_names = _whole(matrix), _whole(aliases)
        rank_list = None if ranks is None else _whole(ranks)
        if not ok or axis_sizes is None or axis_names is None or (ranks is not None and rank_list is None):
            return None
        spec = LayoutSpec(axis_sizes, axis_names, rank_list)
        try:
            spec.build()
        except LayoutError as exc:
            self.fail(path, str(exc))
            return None
        return spec

    def entry(self, value: Any, path: str) -> DimEntry | None:
        if isinstance(value, str):
            return value
        if isinstance(value, list) and 0 < len(value) <= MAX_AXES and all(isinstance(v, str) for v in value):
            return tuple(value)
        self.fail(path, f"expected an axis name, 'None' or a list of 1..{MAX_AXES} axis names, got {_show(value)}")
        return None

    def sharding(self, value: Any, path: str) -> Sharding | None:
        if isinstance(value, list):
            if len(value) > MAX_DIMS:
                self.fail(path, f"a split has {len(value):,} entries: at most {MAX_DIMS} (one per dimension)")
                return None
            split = [self.int_(s, f"{path}[{i}]", 1, MAX_DEVICES) for i, s in enumerate(value)]
            counts = _whole(split)
            return None if counts is None else Sharding(split=counts)
        obj = self.object_(value, path, "a strategy (a list of split counts or {layout, map})")
        if obj is None:
            return None
        self.unknown_keys(obj, {"layout", "map"}, path)
        layout = self.identifier(obj.get("layout"), f"{path}.layout", "layout name")
        raw = self.list_(obj.get("map"), f"{path}.map", "map", MAX_DIMS)
        entries = [self.entry(e, f"{path}.map[{i}]") for i, e in enumerate(raw or [])]
        dims: tuple[DimEntry, ...] | None = _whole(entries)
        if layout is None or raw is None or dims is None:
            return None
        return Sharding(layout=layout, map=dims)

    def tensor(self, value: Any, path: str) -> TensorSpec | None:
        obj = self.object_(value, path, "a tensor")
        if obj is None:
            return None
        self.unknown_keys(obj, {"shape", "dtype", "layout", "map", "split", "role"}, path)
        raw = self.list_(obj.get("shape"), f"{path}.shape", "shape")
        if raw is not None and len(raw) > MAX_DIMS:
            self.fail(f"{path}.shape", f"{len(raw):,} dimensions: at most {MAX_DIMS} are supported")
            raw = None
        shape = [self.int_(s, f"{path}.shape[{i}]", 1, 1 << 40) for i, s in enumerate(raw or [])]
        dtype = obj.get("dtype", "float32")
        if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
            self.fail(f"{path}.dtype", f"unknown dtype {_show(dtype)}: use one of {', '.join(DTYPE_BYTES)}")
        sharding: Sharding | None = None
        if "layout" in obj or "map" in obj:
            sharding = self.sharding({"layout": obj.get("layout"), "map": obj.get("map")}, path)
        elif "split" in obj:
            split = self.list_(obj["split"], f"{path}.split", "split")
            sharding = None if split is None else self.sharding(split, f"{path}.split")
        dims = _whole(shape)
        if raw is None or dims is None:
            return None
        known_dtype = dtype if isinstance(dtype, str) and dtype in DTYPE_BYTES else "float32"
        role = obj.get("role")
        if role is not None and role not in ROLES:
            self.fail(f"{path}.role", f'unknown role {_show(role)}: use "input" (data) or "weight" (trained)')
            role = None
        elif role == "weight" and known_dtype not in FLOAT_DTYPES:
            self.fail(
                f"{path}.role",
                f"a weight is trained, so it needs a float dtype, but this tensor is {known_dtype}: "
                f"use one of {', '.join(FLOAT_DTYPES)} or make it an input",
            )
            role = None
        return TensorSpec(dims, known_dtype, sharding, role)

    def operator(self, value: Any, path: str) -> OperatorSpec | None:
        obj = self.object_(value, path, "an operator")
        if obj is None:
            return None
        op_type = obj.get("type")
        spec = OP_TYPES.get(op_type) if isinstance(op_type, str) else None
        attributes = set(spec.attributes) if spec is not None else set(ALL_ATTRIBUTES)
        self.unknown_keys(obj, _OPERATOR_KEYS | attributes, path)
        name = self.identifier(obj.get("name"), f"{path}.name", "operator name")
        if spec is None:
            self.fail(f"{path}.type", f"unsupported operator {_show(op_type)}: use one of {', '.join(OP_ARITY)}")
        for required in spec.required if spec is not None else ():
            if obj.get(required) is None:
                self.fail(f"{path}.{required}", f"{op_type} needs {required!r} ({_ATTRIBUTE_HELP[required]})")
        inputs = self.list_(obj.get("inputs"), f"{path}.inputs", "inputs", _MAX_INPUTS) or []
        names = [self.identifier(v, f"{path}.inputs[{i}]", "input name") for i, v in enumerate(inputs)]
        known_type = isinstance(op_type, str) and op_type in OP_ARITY
        if isinstance(op_type, str) and known_type and len(inputs) != OP_ARITY[op_type]:
            self.fail(f"{path}.inputs", f"{op_type} takes {OP_ARITY[op_type]} input(s), got {len(inputs)}")
        strategy: list[Sharding | None] | None = None
        if obj.get("strategy") is not None:
            raw = self.list_(obj["strategy"], f"{path}.strategy", "strategy", _MAX_INPUTS) or []
            strategy = [self.sharding(s, f"{path}.strategy[{i}]") for i, s in enumerate(raw)]
            if len(raw) != len(inputs):
                self.fail(f"{path}.strategy", f"give one strategy per input: {len(inputs)} inputs, {len(raw)} given")
        out_strategy: Sharding | None = None
        out_ok = True
        if obj.get("out_strategy") is not None:
            raw_out = self.list_(obj["out_strategy"], f"{path}.out_strategy", "out_strategy", _MAX_INPUTS)
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
        attrs, attrs_ok = self.attributes(obj, path)
        input_names, strategies = _whole(names), None if strategy is None else _whole(strategy)
        if (
            name is None
            or not isinstance(op_type, str)
            or not known_type
            or not out_ok
            or not attrs_ok
            or input_names is None
            or (strategy is not None and strategies is None)
        ):
            return None
        return OperatorSpec(
            name=name,
            type=op_type,
            inputs=input_names,
            strategy=strategies,
            out_strategy=out_strategy,
            transpose_a=flags["transpose_a"] is True,
            transpose_b=flags["transpose_b"] is True,
            **attrs,
        )

    def attributes(self, obj: dict[str, Any], path: str) -> tuple[dict[str, Any], bool]:
        """perm / shape / axis / eps, each checked on its own; (values given, all valid)."""
        values: dict[str, Any] = {}
        ok = True
        if obj.get("perm") is not None:
            perm = self.int_list(obj["perm"], f"{path}.perm", "perm", 0)
            if perm is not None and sorted(perm) != list(range(len(perm))):
                self.fail(
                    f"{path}.perm",
                    f"{list(perm)} is not a permutation: give every dimension 0..{len(perm) - 1} exactly once",
                )
                perm = None
            ok = ok and perm is not None
            values["perm"] = perm
        if obj.get("shape") is not None:
            shape = self.int_list(obj["shape"], f"{path}.shape", "shape", 1)
            ok = ok and shape is not None
            values["shape"] = shape
        if obj.get("axis") is not None:
            axis = self.int_(obj["axis"], f"{path}.axis", -MAX_DIMS, MAX_DIMS - 1)
            ok = ok and axis is not None
            values["axis"] = axis
        if obj.get("eps") is not None:
            eps = obj["eps"]
            if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < 1:
                self.fail(f"{path}.eps", f"expected a small positive number such as 1e-6, got {_show(eps)}")
                ok = False
            else:
                values["eps"] = float(eps)
        return values, ok

    def int_list(self, value: Any, path: str, what: str, minimum: int) -> tuple[int, ...] | None:
        """A non-empty list of at most MAX_DIMS whole numbers >= minimum, or None (with the problem recorded)."""
        raw = self.list_(value, path, what)
        if raw is None:
            return None
        if not raw or len(raw) > MAX_DIMS:
            self.fail(path, f"{what} needs 1..{MAX_DIMS} entries, got {len(raw):,}")
            return None
        return _whole([self.int_(v, f"{path}[{i}]", minimum, 1 << 40) for i, v in enumerate(raw)])

    def repeat(self, value: Any, path: str) -> RepeatSpec | None:
        """{"count": N, "first": OP, "last": OP, "carry": NAME}; references are checked by design_problems."""
        obj = self.object_(value, path, "repeat")
        if obj is None:
            return None
        self.unknown_keys(obj, {"count", "first", "last", "carry"}, path)
        count = self.int_(obj.get("count"), f"{path}.count", 1, MAX_REPEAT)
        names = {
            key: self.identifier(obj.get(key), f"{path}.{key}", f"repeat {key}") for key in ("first", "last", "carry")
        }
        first, last, carry = names["first"], names["last"], names["carry"]
        if count is None or first is None or last is None or carry is None:
            return None
        return RepeatSpec(count, first, last, carry)

    def planner_recipe(self, value: Any, path: str) -> PlannerRecipe | None:
        """{"dp", "mp", "pp", "micro_batches", "micro_batch_size": whole numbers, "sp", "optimizer_shard": true or
        false, "recompute": "none" | "selective" | "full"}: the recipe the Planner made the design from."""
        obj = self.object_(value, path, "planner_recipe")
        if obj is None:
            return None
        self.unknown_keys(obj, set(_RECIPE_INTS) | {"sp", "optimizer_shard", "recompute"}, path)
        numbers = {key: self.int_(obj.get(key), f"{path}.{key}", 1, MAX_DEVICES * 1024) for key in _RECIPE_INTS}
        flags = {key: obj.get(key, False) for key in ("sp", "optimizer_shard")}
        bad = [key for key, flag in flags.items() if not isinstance(flag, bool)]
        for key in bad:
            self.fail(f"{path}.{key}", f"expected true or false, got {_show(flags[key])}")
        recompute = obj.get("recompute", "none")
        if not isinstance(recompute, str) or recompute not in RECOMPUTE_MODES:
            modes = ", ".join(RECOMPUTE_MODES)
            self.fail(f"{path}.recompute", f"unknown recompute {_show(recompute)}: use one of {modes}")
            bad.append("recompute")
        if None in numbers.values() or bad:
            return None
        return PlannerRecipe(**numbers, **flags, recompute=recompute)  # type: ignore[arg-type]


_RECIPE_INTS = ("dp", "mp", "pp", "micro_batches", "micro_batch_size")


def read_design(data: Any) -> Design:
    """Parsed JSON -> Design, field by field; raises DesignError listing every malformed field."""
    reader = _Reader()
    obj = reader.object_(data, "$", "a design file")
    if obj is None:
        raise reader.error()
    reader.unknown_keys(obj, _DESIGN_KEYS, "$")
    version = obj.get(FORMAT_KEY, FORMAT_VERSION)
    if version != FORMAT_VERSION:
        reader.fail(f"$.{FORMAT_KEY}", f"this ShardScope reads design format {FORMAT_VERSION}, got {_show(version)}")
    name = obj.get("name", "untitled")
    try:
        check_name(name if not isinstance(name, str) or len(name) <= 64 else name[:64] + "...", "design name")
    except WorkspaceError as exc:
        reader.fail("$.name", str(exc))
    description = obj.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_STRING:
        reader.fail("$.description", f"must be text of at most {MAX_STRING} characters")
    device_num = reader.int_(obj.get("device_num", 8), "$.device_num", 1, MAX_DEVICES)
    layouts: dict[str, LayoutSpec] = {}
    raw_layouts = reader.object_(obj.get("layouts", {}), "$.layouts", "layouts", MAX_LAYOUTS) or {}
    for key, value in raw_layouts.items():
        if reader.identifier(key, f"$.layouts.{_key(key)}", "layout name") is not None:
            spec = reader.layout_spec(value, f"$.layouts.{key}")
            if spec is not None:
                layouts[key] = spec
    tensors: dict[str, TensorSpec] = {}
    raw_tensors = reader.object_(obj.get("tensors", {}), "$.tensors", "tensors", MAX_TENSORS) or {}
    for key, value in raw_tensors.items():
        if reader.identifier(key, f"$.tensors.{_key(key)}", "tensor name") is not None:
            tensor = reader.tensor(value, f"$.tensors.{key}")
            if tensor is not None:
                tensors[key] = tensor
    operators: list[OperatorSpec] = []
    raw_operators = reader.list_(obj.get("operators", []), "$.operators", "operators", MAX_OPERATORS) or []
    for i, value in enumerate(raw_operators):
        op = reader.operator(value, f"$.operators[{i}]")
        if op is not None:
            operators.append(op)
    loss = obj.get("loss", "mse")
    if not isinstance(loss, str) or loss not in LOSSES:
        reader.fail("$.loss", f"unknown loss {_show(loss)}: use one of {', '.join(LOSSES)}")
    repeat = reader.repeat(obj["repeat"], "$.repeat") if obj.get("repeat") is not None else None
    raw_recipe = obj.get("planner_recipe")
    planner_recipe = None if raw_recipe is None else reader.planner_recipe(raw_recipe, "$.planner_recipe")
    if reader.problems:
        raise reader.error()
    return Design(
        name=name,
        description=description,
        device_num=device_num or 8,
        layouts=layouts,
        tensors=tensors,
        operators=tuple(operators),
        loss=loss,
        repeat=repeat,
        planner_recipe=planner_recipe,
    )
