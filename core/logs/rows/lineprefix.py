"""A file's own line prefix, learnt from its lines: what a log pipeline put before every line of the process.

Why: a log nobody here has seen is mostly a known failure behind a prefix not seen before (docker compose's
`trainer_1  | `, loguru's `2026-11-26 10:00:00.123 | INFO     | __main__:train:42 - `, glog's
`I1126 10:00:00.123456 1234 train.py:12] `, syslog's `Nov 26 10:00:00 node03 python[1234]: `, Ray's
`(RayTrainWorker pid=1234) `, `srun -l`'s `3: `; tests/mutations.py's families, each cited). Listing every
pipeline's prefix cannot keep up; a traceback header tells where the process's own line begins: whatever
precedes `Traceback (most recent call last)` on its line is the prefix, and the file's later lines with a
prefix of the same shape (its digit runs may differ: a stamp rises, a line number changes) are read behind it.

The prefix is learnt once per file (a header found inside a line) and matched by one anchored pattern, only on
the lines the parser already looks at for a failure: the reader stays at grep's pace.
"""

from __future__ import annotations

import re

__all__ = ["MAX_PREFIX", "learn_prefix", "prefix_end"]

MAX_PREFIX = 160  # bytes: a longer text before a header is a message quoting one, not a pipeline's prefix
# a pipeline's prefix ends at a separator (`| `, `: `, `] `, `) `, `- `, a space) and holds a mark that is no
# word (a digit, `|`, `:`, `]`, `)`): `Original Traceback (most recent call last):` (PyTorch's DataLoader
# worker quoting its worker's traceback) is a message, not a prefix
_ENDS = (b" ", b"|", b":", b"]", b">", b")", b"-")
_RE_MARK = re.compile(rb"[\d|:\]\)>=]")
_RE_DIGITS = re.compile(rb"\d+")


def learn_prefix(prefix: bytes) -> re.Pattern[bytes] | None:
    """The shape of the text before a traceback header found inside a line, as an anchored pattern (its digit
    runs any digits, the rest as written); None when that text is no pipeline's prefix."""
    if not prefix or len(prefix) > MAX_PREFIX or not prefix.endswith(_ENDS) or not _RE_MARK.search(prefix):
        return None
    if b'"' in prefix or b"'" in prefix:  # inside a quoted message (a JSON record's text, a repr)
        return None
    parts = _RE_DIGITS.split(prefix)
    return re.compile(rb"\d+".join(re.escape(p) for p in parts))


def prefix_end(pattern: re.Pattern[bytes], line: bytes) -> int:
    """Where the line after the file's learnt prefix starts; 0 when the line does not begin with it."""
    m = pattern.match(line)
    return 0 if m is None else m.end()
