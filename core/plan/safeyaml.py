"""The one reader of untrusted YAML (a MindFormers config from a user, a path or an upload): bounded before it is used.

Why not `yaml.safe_load`: safe means "no code", not "small". A 600-byte YAML of nested aliases
("billion laughs", `l1: &l1 [*l0, *l0, ...]` nine levels deep) builds a value that prints as gigabytes; an
integer of 5,000 digits cannot be formatted (Python's 4,300-digit limit) and YAML 1.1's base-60 integers
(`1:1:1:...`) convert in quadratic time. So this loader, on top of PyYAML's pure-Python parser (libyaml's
composer recurses in C and crashes on deep nesting):

* refuses input over `MAX_YAML_BYTES`, UTF-16/32 and non-UTF-8 text (MindFormers reads UTF-8), by name;
* refuses nesting deeper than `MAX_DEPTH` while composing (before Python's recursion limit is near);
* counts the values the document expands to while composing, each alias at every use, and refuses more
  than `MAX_VALUES` where the count crosses it, before anything is built (real configs alias a dataset
  block: a few hundred values in all);
* resolves numbers only in forms YAML 1.1 (what MindFormers' PyYAML reads) and YAML 1.2 agree on:
  `12`, `-3`, `0x1f`, `1.5`, `.5e-3`, `.inf`. Base 60, `1_000`, `0b101`, `0o17` and leading-zero octal
  stay strings, so a key that needs a number refuses them by name instead of reading another value;
  integers longer than `MAX_INT_DIGITS` are refused before they are converted. Booleans and null keep
  PyYAML's YAML 1.1 spellings (`yes`, `on`, `~`), as MindFormers reads them;
* says every failure in one line naming the source, the line and the key (`YamlError`).

`describe` is the only way a value from such a file reaches a message: its type and a short `reprlib`
form, never the value whole.
"""

from __future__ import annotations

import codecs
import re
import reprlib
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from core.errors import UserError

__all__ = [
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_VALUES",
    "MAX_YAML_BYTES",
    "BoundedLoader",
    "YamlError",
    "cell",
    "decode_yaml",
    "describe",
    "load_mapping",
]

MAX_YAML_BYTES = 1 << 20  # a MindFormers YAML is ~5 KB; 1 MiB is ample and bounds the parse (~1 s)
MAX_DEPTH = 64  # a MindFormers YAML nests 4 deep
MAX_VALUES = 20_000  # scalars, lists and mappings, aliases expanded (real configs: 312-427; also bounds the time)
MAX_INT_DIGITS = 32  # an int64 has 19; longer is no setting, and past 4,300 Python cannot print it
MAX_NUMBER_CHARS = 64  # a float's text

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
# The forms PyYAML's YAML 1.1 resolver and the YAML 1.2 core schema both read as numbers (1.1 wants a signed
# exponent and no sign before `.5`; 1.2 has no `0b`, `1_000`, base 60 or leading-zero octal; 1.1 has no `0o`).
_INT_FORMS = re.compile(r"[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+")
_FLOAT_FORMS = re.compile(
    r"(?:[-+]?[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)


class YamlError(UserError, ValueError):
    """A YAML that is refused: not UTF-8, not YAML, too big, too deep or expanding too far. One line that
    names the source and, where known, the line and key."""


class _LimitError(yaml.YAMLError):
    """A bound crossed while composing; turned into a YamlError naming the key by `load_mapping`."""

    def __init__(self, problem: str, node: Any = None, key: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = node.start_mark if node is not None else None
        self.key = key


class _Repr(reprlib.Repr):
    """reprlib with short strings and ints that are never printed whole (past 4,300 digits str() raises)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxstring = self.maxother = self.maxlong = 40
        self.maxlevel = 2
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = 4

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 128:
            return f"<an integer of about {int(x.bit_length() * 0.30103) + 1:,} digits>"
        return super().repr_int(x, level)


_REPR = _Repr()


def describe(value: Any) -> str:
    """A value for a one-line message: a scalar as its short repr (`-4`, `'int8'`), a collection as its
    type, size and short repr (`a list of 9 items [[[...], ...], ...]`). Never formats the value whole, never
    longer than ~160 characters."""
    if value is None or isinstance(value, bool | int | float | str):
        text = _REPR.repr(value)
    elif isinstance(value, list | dict | tuple | set):
        text = f"a {type(value).__name__} of {len(value):,} item{'' if len(value) == 1 else 's'} {_REPR.repr(value)}"
    else:
        text = f"a {type(value).__name__} {_REPR.repr(value)}"
    return text if len(text) <= 160 else text[:157] + "..."  # a repr has no line break: it escapes them


def cell(value: Any) -> str:
    """A YAML value for a table cell or a label: a scalar as written, a list or mapping as `describe` gives it;
    at most 80 characters."""
    plain = value is None or isinstance(
        value, bool | float | str
    )  # an int via describe: past 4,300 digits str() raises
    text = str(value) if plain else describe(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class _Resolver(BaseResolver):
    """PyYAML's YAML 1.1 resolver without the forms 1.1 and 1.2 read differently (see the module's doc)."""


for _tag, _pattern, _first in (
    (
        "tag:yaml.org,2002:bool",
        r"yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
        "yYnNtTfFoO",
    ),
    (_INT, _INT_FORMS.pattern, "-+0123456789"),
    (_FLOAT, _FLOAT_FORMS.pattern, "-+0123456789."),
    ("tag:yaml.org,2002:merge", r"<<", "<"),
    ("tag:yaml.org,2002:null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
):
    _Resolver.add_implicit_resolver(_tag, re.compile(rf"^(?:{_pattern})$"), list(_first))


class _Constructor(SafeConstructor):
    """SafeConstructor whose ints and floats (also `!!int` / `!!float` tagged) accept only the shared forms."""

    def construct_yaml_int(self, node: ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        if not _INT_FORMS.fullmatch(text):
            raise ConstructorError(None, None, f"{describe(text)} is not an integer", node.start_mark)
        return int(text[2:], 16) if text.startswith("0x") else int(text)

    def construct_yaml_float(self, node: ScalarNode) -> float:
        text = str(self.construct_scalar(node))
        if not _FLOAT_FORMS.fullmatch(text) and not _INT_FORMS.fullmatch(text):
            raise ConstructorError(None, None, f"{describe(text)} is not a number", node.start_mark)
        return super().construct_yaml_float(node)

    def construct_yaml_bool(self, node: ScalarNode) -> bool:
        text = str(self.construct_scalar(node))
        if text.lower() not in self.bool_values:  # `!!bool maybe`: PyYAML's KeyError
            raise ConstructorError(None, None, f"{describe(text)} is not true or false", node.start_mark)
        return self.bool_values[text.lower()]

    def construct_yaml_timestamp(self, node: ScalarNode) -> Any:
        try:  # `!!timestamp foo` or a 13th month: PyYAML's AttributeError / ValueError
            return super().construct_yaml_timestamp(node)
        except (AttributeError, ValueError, OverflowError):
            raise ConstructorError(None, None, f"{describe(node.value)} is not a date", node.start_mark) from None


# types-PyYAML types a constructor's first argument as a whole Loader; these are methods of the constructor
# mixin our loader is built from (as PyYAML's own SafeConstructor registers its methods)
_Constructor.add_constructor("tag:yaml.org,2002:bool", _Constructor.construct_yaml_bool)  # type: ignore[type-var]
_Constructor.add_constructor("tag:yaml.org,2002:timestamp", _Constructor.construct_yaml_timestamp)  # type: ignore[type-var]
_Constructor.add_constructor(_INT, _Constructor.construct_yaml_int)  # type: ignore[type-var]
_Constructor.add_constructor(_FLOAT, _Constructor.construct_yaml_float)  # type: ignore[type-var]


class BoundedLoader(Reader, Scanner, Parser, Composer, _Constructor, _Resolver):
    """PyYAML's pure-Python safe loader with the bounds of this module, checked while composing, node by node,
    so a refused file is dropped as soon as it crosses one (PyYAML's pure-Python scanner takes ~0.1 ms a
    value: the 1 MiB list `[0,0,...]` cost 49 s before it could be counted whole)."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        _Constructor.__init__(self)
        _Resolver.__init__(self)
        self._depth = 0
        self._values = 0  # composed so far, each alias counted as the values it stands for
        self._paths: list[str] = [""]  # the key path of each node being composed, for messages
        self._sizes = _Sizes()

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()
        path = _child_path(self._paths[-1], parent, index)
        if isinstance(event, AliasEvent):
            target = self.anchors.get(event.anchor)  # None: PyYAML's own "undefined alias" follows
            if target is not None and target.end_mark is None:  # still being composed: it would hold itself
                raise _LimitError("an alias refers to the value that holds it", event, path)
            self._count(self._sizes.size(target) if target is not None else 0, event, path)
            return super().compose_node(parent, index)
        if self._depth >= MAX_DEPTH:
            raise _LimitError(f"nested more than {MAX_DEPTH} levels deep", event, path)
        self._count(1, event, path)
        self._depth += 1
        self._paths.append(path)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            self._paths.pop()
        if isinstance(node, ScalarNode):
            _check_number(node, path)
        return node

    def _count(self, values: int, event: Any, path: str) -> None:
        self._values += values
        if self._values > MAX_VALUES:
            raise _LimitError(
                f"it holds more than {MAX_VALUES:,} values (each alias counted at every use)", event, path
            )


def _child_path(path: str, parent: Node | None, index: Any) -> str:
    """The key path of the node PyYAML composes next: `parallel_config.data_parallel`, `l5[1]`; a mapping's
    key node (index None) keeps its mapping's path."""
    if isinstance(parent, SequenceNode) and isinstance(index, int):
        return f"{path}[{index}]"
    if isinstance(parent, MappingNode) and index is not None:
        name = _one_line(index.value, 40) if isinstance(index, ScalarNode) else "?"
        return f"{path}.{name}" if path else name
    return path


class _Sizes:
    """The values a complete composed node stands for (an alias is the same node object at every use), each
    node walked once. Its children were counted and checked as they were composed: no bound is needed here
    beyond what the loader's count already enforces."""

    def __init__(self) -> None:
        self.sizes: dict[int, int] = {}

    def size(self, node: Node) -> int:
        known = self.sizes.get(id(node))
        if known is None:
            children: list[Node] = []
            if isinstance(node, SequenceNode):
                children = list(node.value)
            elif isinstance(node, MappingNode):
                children = [part for pair in node.value for part in pair]
            known = 1 + sum(self.size(child) for child in children)
            self.sizes[id(node)] = known
        return known


def _check_number(node: ScalarNode, key: str) -> None:
    """Refuse an int or float too long to be a setting, before it is converted (or ever formatted)."""
    text = node.value
    if node.tag == _INT and len(text.lstrip("+-")) > MAX_INT_DIGITS:
        digits = len(text.lstrip("+-"))
        raise _LimitError(f"an integer of {digits:,} digits (at most {MAX_INT_DIGITS})", node, key)
    if node.tag == _FLOAT and len(text) > MAX_NUMBER_CHARS:
        raise _LimitError(f"a number of {len(text):,} characters (at most {MAX_NUMBER_CHARS})", node, key)


def decode_yaml(data: bytes, source: str) -> str:
    """The text of a YAML file's bytes: UTF-8 (a UTF-8 byte-order mark is dropped); UTF-16/32 and other
    encodings are refused in one line naming the source and what was found (MindFormers reads UTF-8)."""
    for boms, name in (
        ((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE), "UTF-32"),  # before UTF-16: UTF-32 LE's mark starts alike
        ((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE), "UTF-16"),
    ):
        if data.startswith(boms):
            raise YamlError(f"{source} is {name} text (it starts with a {name} byte-order mark): save it as UTF-8")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise YamlError(
            f"{source} is not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line}: save it as UTF-8"
        ) from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise YamlError(f"{source} holds NUL characters (line {line}): UTF-16 without a byte-order mark, or binary?")
    return text


def load_mapping(text: str, source: str | None = None) -> dict[str, Any]:
    """The YAML text as a mapping ({} for an empty document), read by `BoundedLoader`; otherwise a YamlError
    of one line naming `source` (when given: the caller may name the file itself), the line and the key."""
    lead = f"{source}: " if source else ""
    if len(text) > MAX_YAML_BYTES:
        raise YamlError(f"{lead}{len(text):,} characters: at most {MAX_YAML_BYTES:,}")
    loader = None
    try:
        loader = BoundedLoader(text)  # its Reader refuses unprintable characters at once
        data = loader.get_single_data()
    except _LimitError as exc:
        raise YamlError(lead + _message(exc, exc.key, "refused")) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        what = f"the character U+{exc.character:04X}" if isinstance(exc.character, int) else "a character"
        raise YamlError(f"{lead}not valid YAML at line {line}: {what} is not allowed in YAML") from None
    except yaml.YAMLError as exc:
        raise YamlError(lead + _message(exc, "", "not valid YAML")) from None
    except RecursionError:  # not expected below MAX_DEPTH; kept so no traceback can escape
        raise YamlError(f"{lead}not valid YAML: nested too deeply") from None
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:  # a constructor's own slip
        raise YamlError(f"{lead}not valid YAML: a value could not be built ({type(exc).__name__})") from None
    finally:
        if loader is not None:
            loader.dispose()
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise YamlError(f"{lead}a MindFormers config is a mapping of keys, this YAML is a {type(data).__name__}")
    return data


def _message(exc: yaml.YAMLError, key: str, verdict: str) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}" if mark is not None else ""
    at_key = f" (key {_one_line(key, 80)})" if key else ""
    problem = getattr(exc, "problem", None) or type(exc).__name__
    return f"{verdict}{where}{at_key}: {_one_line(problem)}"
