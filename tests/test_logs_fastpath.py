"""core.logs fast path: the bulk scan / numpy rows / prefetching reader give exactly the rows of a
plain line-by-line parse, on random mixes of noise, loss, timing, traceback and error lines and any
chunking of the writes or of the reads."""

from __future__ import annotations

import itertools
import math
import re
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs import ReaderSettings, read_run
from core.logs.rows.columns import ColumnHeader, header_of, read_row
from core.logs.rows.failures import fatal_quick as failures_quick
from core.logs.rows.failures import fatal_reason as failures_reason
from core.logs.rows.failures import line_tag
from core.logs.rows.failures import task_end as failures_task_end
from core.logs.rows.formats import RE_EXC_LINE, ROW_FIELDS, parse_step_time_line, read_loss
from core.logs.rows.linekinds import RE_TIMEMONITOR, WORTH, opens_traceback
from core.logs.rows.lineranks import line_rank
from core.logs.rows.perfile import estimate_name
from core.logs.rows.reader import RunReader
from core.logs.rows.redraws import bar_of
from core.logs.rows.templated import Shapes
from core.logs.tokens import bulk as logs
from core.logs.tokens.lexicon import KEYED_START, KEYWORDS
from core.logs.tokens.linescan import KEYWORDS_TESTED, fixed_numbers, match_shapes, scan_block, words_of
from tests.strategies import NOISE, OTHER, PLAIN, RARE, log_text, loss_line, value_text


# values that the bulk path must read bit for bit like `float`, or leave to the exact path
def reference_reads(data: bytes) -> list[tuple[tuple, dict[str, float]]]:
    """The training rows of a worker log and their other metrics, one line at a time with the public
    `read_loss` (the general reader): every line but errors, traceback frames, exception and timing lines
    (also behind a launcher's tag: `[1,2]<stderr>:Traceback ...`), and a progress bar's redraws (a NaN bar
    drawn again at its counter on the next line; a bar moved on the next line whose values stayed)."""
    rows, pending_traceback, pos = [], False, 0
    hosts: dict[str | None, int] = {}
    last_bar: tuple[bytes, int] | None = None  # a progress bar's last draw that gave a row: (counter, line)
    after_bar = False  # the last row came from a bar line
    seen_error = False  # an error line came: a frame no longer opens a traceback whose header was cut
    header: ColumnHeader | None = None  # the last column table's header (core.logs.rows.columns)
    for i, raw in enumerate(data.split(b"\n")[:-1]):  # complete lines only
        off, pos = pos, pos + len(raw) + 1
        line = raw[:-1] if raw.endswith(b"\r") else raw
        _, skip = line_tag(line)  # a launcher's tag before a failure's line: the line after it is read (issue 30)
        body = line[skip:]
        # the tag's own space (`[rank2]: Traceback`) is no indent; a pending traceback's frame keeps its indent
        stripped = body.lstrip(b" ")
        frame = len(body) - len(stripped) > 1 and not stripped.startswith(b"Traceback (most recent call last)")
        if skip and pending_traceback and frame and not RE_EXC_LINE.match(stripped):
            line = body
        elif skip and (
            stripped.startswith((b"[ERROR]", b"[CRITICAL]", b"[EXCEPTION]", b"Traceback (most recent call last)"))
            or (not seen_error and opens_traceback(stripped))
            or (pending_traceback and stripped.startswith(b"\t"))
            or RE_EXC_LINE.match(stripped)
            or failures_reason(stripped) is not None
            or failures_task_end(stripped) is not None
        ):
            line = stripped
        if not line or line.startswith((b"[ERROR]", b"[CRITICAL]", b"[EXCEPTION]")):
            seen_error = seen_error or bool(line)
            continue  # error lines carry no metrics
        if not line.startswith(b"["):
            # a traceback's header, or its first frame when the header was cut (before the file's first error)
            if line.startswith(b"Traceback (most recent call last)") or (
                not seen_error and line[:1] in b" \tF" and opens_traceback(line)
            ):
                pending_traceback = seen_error = True
                continue
            if pending_traceback and line.startswith((b" ", b"\t")):
                continue
            if RE_EXC_LINE.match(line):
                pending_traceback, seen_error = False, True
                continue
            if RE_TIMEMONITOR.search(line) or parse_step_time_line(line) is not None:
                continue
        # a column table (core.logs.rows.columns): a keyless row under the file's last header line, read by it
        table = read_row(header, line) if header is not None and not line.startswith(b"[") else None
        r = table if table is not None else read_loss(line)
        if r is None and not line.startswith(b"[") and (named_columns := header_of(line)) is not None:
            header = named_columns
        if r is not None and not r.eval and "loss" in r.fields:
            f = r.fields
            named = line_rank(line)  # whose row: the rank its line names, a host's series, else the file's (0)
            who = 0 if named is None else named.rank
            if named is not None and who is None:
                who = hosts.setdefault(named.host, len(hosts))
            row = (*(f.get(k, math.nan) for k in ROW_FIELDS), float(off))
            bar, redraw = bar_of(line), False
            if bar and after_bar and last_bar is not None:  # core.logs.rows.redraws, stated plainly
                if row[ROW_FIELDS.index("loss")] != row[ROW_FIELDS.index("loss")]:  # NaN: the counter decides
                    redraw = bar == last_bar[0] and i == last_bar[1] + 1
                else:  # the bar moved (counter, time or rate), on the next line, and every value but the time stayed
                    values = [k for k in ROW_FIELDS if k != "time"]
                    prev, prev_extras = rows[-1][0], rows[-1][1]
                    redraw = (
                        bar != last_bar[0]
                        and i == last_bar[1] + 1
                        and _bits([[row[ROW_FIELDS.index(k)] for k in values]])
                        == _bits([[prev[ROW_FIELDS.index(k)] for k in values]])
                        and r.extras.keys() == prev_extras.keys()
                        and _bits([list(r.extras.values())]) == _bits([[prev_extras[k] for k in r.extras]])
                    )
            if bar:
                last_bar = (bar, i)
            after_bar = bool(bar)
            if not redraw:
                rows.append((row, r.extras, who))
    return rows


def _named(row: tuple) -> frozenset[str]:
    """The values a row names: its numeric fields holding a number, the time and the loss left out."""
    return frozenset(k for k, v in zip(ROW_FIELDS, row, strict=False) if k not in ("time", "loss") and v == v)


def per_file_series(reads: list[tuple], data: bytes = b"") -> tuple[list[tuple], list[tuple]]:
    """One file's reads (row, extras, the rank its line names) split by the per-file series rules, stated
    plainly (core.logs.rows.perfile is the code under test): (training reads, evaluation reads).
    - a row with an epoch and no step is an evaluation row when the file's rows with a step outnumber them;
    - two neighbouring rows of one rank with one step and different names: the row whose names fewer of the
      file's rows have is an evaluation row;
    - two neighbouring rows of one rank with one loss (a number, or NaN on both unless they name two different
      steps: Caffe's `Train net output #0: loss = -nan` after `Iteration 100, loss = -nan`) and different names:
      the row naming fewer values (as many: the later row) is dropped, when such rows are at least half of the
      file's rows naming what it names;
    - a row naming an evaluation loss beside its loss (nanoGPT's estimate line) is an evaluation row when the
      file's other rows are more than twice as many and none of them has its shape;
    - in a file whose first row names no step, rows whose loss key says it averages (`avg loss`, `Average Train
      Loss`, the line's only loss word) are evaluation rows when the file's other rows kept are as many or more;
    - a step's side rows: a rank's rows naming no step and no epoch (the averages set aside not counted) are
      dropped when none comes before its first row with a step and, between its rows with a step, the commonest
      count of them (the smaller on a tie) is one to eight and holds between more than half of those rows (the
      file's step-less rows at least half as many as its gaps between rows with a step);
    - another loop: where a file's rows with a step and no epoch are fewer than half its rows with a step, those
      of them counted to a total are evaluation rows when rows with an epoch count to totals and none to theirs."""
    epoch, step, loss = (ROW_FIELDS.index(k) for k in ("epoch", "step", "loss"))
    epoch_only = sum(row[epoch] == row[epoch] and row[step] != row[step] for row, _, _ in reads)
    stepped = sum(row[step] == row[step] for row, _, _ in reads) > epoch_only
    shape_count: dict[frozenset[str], int] = {}
    for row, _, _ in reads:
        shape_count[_named(row)] = shape_count.get(_named(row), 0) + 1
    evaluation, echoes = set(), {}
    by_rank: dict[object, list[int]] = {}
    for i, (row, _, who) in enumerate(reads):
        by_rank.setdefault(who, []).append(i)
        if stepped and row[epoch] == row[epoch] and row[step] != row[step]:
            evaluation.add(i)
    for mine in by_rank.values():
        for i, j in itertools.pairwise(mine):
            a, b = reads[i][0], reads[j][0]
            if _named(a) == _named(b):
                continue
            if a[step] == b[step] and shape_count[_named(a)] != shape_count[_named(b)]:
                evaluation.add(i if shape_count[_named(a)] < shape_count[_named(b)] else j)
            nan_at_one_step = (
                a[loss] != a[loss]
                and b[loss] != b[loss]
                and not (a[step] != b[step] and a[step] == a[step] and b[step] == b[step])
            )
            if a[loss] == b[loss] or nan_at_one_step:  # as many named: the later row is the echo
                fewer = i if len(_named(a)) < len(_named(b)) else j
                echoes.setdefault(_named(reads[fewer][0]), set()).add(fewer)
    # estimates: rows naming an evaluation loss (a number) beside their loss, in a file whose rows with a step or
    # an epoch are more than three times as many, are evaluation rows unless a row naming none has their shape
    est = {i for i, (_, extras, _) in enumerate(reads) if any(estimate_name(n) and v == v for n, v in extras.items())}
    counted = sum(row[step] == row[step] or row[epoch] == row[epoch] for row, _, _ in reads)
    if 0 < 3 * len(est) < counted:
        plain = {_named(row) for i, (row, _, _) in enumerate(reads) if i not in est}
        evaluation |= {i for i in est if _named(reads[i][0]) not in plain}
    dropped = {i for shape, rows in echoes.items() if 2 * len(rows) >= shape_count[shape] for i in rows}
    averaged = _averaged_reads(reads, data) - evaluation - dropped
    if averaged and len(reads) - len(evaluation | dropped | averaged) >= len(averaged):
        evaluation |= averaged
    dropped |= _side_reads(reads, {who: [i for i in mine if i not in averaged] for who, mine in by_rank.items()})
    evaluation |= _other_loop_reads(reads) - evaluation - dropped
    kept = [read for i, read in enumerate(reads) if i not in evaluation and i not in dropped]
    return kept, [read for i, read in enumerate(reads) if i in evaluation - dropped]


def _other_loop_reads(reads: list[tuple]) -> set[int]:
    """The reads of another loop (per_file_series' rule): rows with a step, no epoch and a total of their own."""
    epoch, step, total = (ROW_FIELDS.index(k) for k in ("epoch", "step", "steps_total"))
    with_step = [i for i, (row, _, _) in enumerate(reads) if row[step] == row[step]]
    loose = [i for i in with_step if reads[i][0][epoch] != reads[i][0][epoch]]
    if not 0 < 2 * len(loose) < len(with_step):
        return set()
    totals = {reads[i][0][total] for i in with_step if i not in loose and reads[i][0][total] == reads[i][0][total]}
    return {
        i for i in loose if totals and reads[i][0][total] == reads[i][0][total] and reads[i][0][total] not in totals
    }


_RE_AVERAGED = re.compile(
    rb"(?i)(?<![A-Za-z])(?:avg|average|mean)[ ._]{0,2}(?:train(?:ing)?[ _])?loss(?![A-Za-z])"
    rb"[\"'`]?\s{0,3}[:=]?\s{0,3}(\S+)"
)


def _averaged_reads(reads: list[tuple], data: bytes) -> set[int]:
    """The reads whose loss key says it averages (per_file_series' averages rule), in a file whose first row names
    no step."""
    step, loss = ROW_FIELDS.index("step"), ROW_FIELDS.index("loss")
    if not reads or reads[0][0][step] == reads[0][0][step]:
        return set()
    out = set()
    for i, (row, _, _) in enumerate(reads):
        at = int(row[-1])
        line = data[at:].split(b"\n", 1)[0]
        m = _RE_AVERAGED.search(line)
        if m is None or len(re.findall(rb"(?i)loss", line)) != 1:
            continue
        try:
            value = float(m[1].rstrip(b",;)]}"))
        except ValueError:
            continue
        if value == row[loss] or (value != value and row[loss] != row[loss]):
            out.add(i)
    return out


def _side_reads(reads: list[tuple], by_rank: dict[object, list[int]]) -> set[int]:
    """The reads that are a step's side rows (per_file_series' last rule)."""
    epoch, step = ROW_FIELDS.index("epoch"), ROW_FIELDS.index("step")
    unplaced = {i for i, (row, _, _) in enumerate(reads) if row[step] != row[step] and row[epoch] != row[epoch]}
    n_stepped = sum(row[step] == row[step] for row, _, _ in reads)
    if not unplaced or n_stepped < 2 or 2 * len(unplaced) < n_stepped - 1:
        return set()
    out: set[int] = set()
    for mine in by_rank.values():
        stepped = [i for i in mine if reads[i][0][step] == reads[i][0][step]]
        sides = [i for i in mine if i in unplaced]
        if len(stepped) < 2 or not sides or sides[0] < stepped[0]:
            continue
        gaps = [sum(a < i < b for i in sides) for a, b in itertools.pairwise(stepped)]
        k = min(set(gaps), key=lambda g: (-gaps.count(g), g))
        if 1 <= k <= 8 and 2 * gaps.count(k) > len(gaps):
            out |= set(sides)
    return out


def reference_rows(data: bytes) -> list[tuple]:
    """The training rows of one file, the per-file series rules applied."""
    return [row for row, _, _ in per_file_series(reference_reads(data), data)[0]]


def _extras_match(snap, data: bytes) -> bool:
    """Every other metric column of the snapshot holds exactly the reference's values (NaN elsewhere)."""
    reads = reference_reads(data)
    names = {n for _, extras, _ in reads for n in extras}  # every metric the file names is a column
    reads = per_file_series(reads, data)[0]
    extra_cols = [c for c in snap.metrics.columns if c not in logs.ROW_KEYS and c not in ("rank", "file")]
    if set(extra_cols) != names:
        return False
    want = [[extras.get(n, math.nan) for n in sorted(names)] for _, extras, _ in reads]
    return _bits(want) == _bits(snap.metrics[sorted(names)].to_numpy(dtype=np.float64))


def _bits(rows: list[tuple] | np.ndarray) -> list[tuple]:
    """Rows as exact bit patterns, so -0.0 != 0.0 and nan == nan (of the same sign)."""
    return [tuple(struct.pack("<d", float(v)) for v in row) for row in rows]


def _metric_rows(snap) -> np.ndarray:
    return snap.metrics[list(logs.ROW_KEYS)].to_numpy(dtype=np.float64)


def _small_blocks(read_block: int, prefetch_min: int, block_min: int) -> ReaderSettings:
    """Tiny read blocks / prefetch threshold / bulk threshold so small inputs cross every path."""
    return ReaderSettings(
        read_block=read_block,
        prefetch_min=prefetch_min,
        block_min=block_min,
        max_partial_line=read_block - 1,
        shape_min=block_min,
        compiled_min=0,
    )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=log_text(), block_min=st.sampled_from([1, 2, 5, 64]))
@example(data=b"epoch: 1 step: 2, loss is 1e\nepoch: 1 step: 3, loss is 1.5.2\n" * 3, block_min=1)
@example(  # a NaN bar drawn again at its counter on the next line: one row (core.logs.rows.redraws)
    data=b"Epoch 0: :   3%| | 9000/301500 [1:42:42<55:37:46, reduced_train_loss=nan.0, val_loss=7.040]\n" * 2,
    block_min=1,
)
@example(data=b"[1,1]<stderr>:Traceback (most recent call last):\n\tepoch: 1 step: 9, loss is 9.0\n", block_min=1)
@example(  # a YOLO column table (core.logs.rows.columns), ultralytics/ultralytics#1654's lines
    data=b"      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
    b"     20/300      16.1G      1.477     0.7796      1.028        120        800: 100%|#| 805/805 [01:39<00:00]\n"
    b"                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|#| 101/101\n"
    b"                   all       3225      39675       0.84      0.597      0.677      0.366\n" * 3,
    block_min=1,
)
# the per-file series rules (core.logs.rows.perfile): an epoch summary beside step rows, a step printed twice in
# a rarer shape (nanoGPT), a step's echo naming fewer values (TFLearn), two ranks of one stream at one step
@example(
    data=b"epoch: 1 step: 2, loss is 1.5\nepoch: 1 step: 3, loss is 1.5\nEpoch 1 completed with avg loss: 2.4\n",
    block_min=1,
)
@example(
    data=b"iter 1: loss 4.1, time 96.5ms, mfu 15.3%\nstep 1: train loss 4.0390, val loss 4.0427\n"
    b"iter 2: loss 4.0, time 96.5ms, mfu 15.3%\n",
    block_min=2,
)
@example(
    data=b"Training Step: 8  | total loss: 2.03040 | time: 0.275s\n"
    b"| Adam | epoch: 001 | loss: 2.03040 - acc: 0.2720 -- iter: 00512/55000\n" * 2,
    block_min=1,
)
@example(  # LlamaFactory: its callbacks line, then the Trainer's dict naming as many other values
    data=b"{'loss': 6.84, 'learning_rate': 5.0e-05, 'throughput': 439.09}\n"
    b"{'loss': 6.84, 'grad_norm': 0.0, 'learning_rate': 5e-05}\n" * 2,
    block_min=1,
)
@example(
    data=b"[1,0]<stdout>:epoch: 1 step: 3, loss is 2.5\n[1,1]<stdout>:epoch: 1 step: 3, loss is 2.5, lr: 0.1\n" * 2,
    block_min=1,
)
@example(  # a first row worded as an average beside as many other rows: a summary (hypothesis, stop 47)
    data=b"Epoch 1 completed with avg loss: 2.4179, learning rate: 0.003\nepoch: 0001, step: 0, loss is 4.52\n",
    block_min=1,
)
@example(  # a step-less row between two stepped rows: a step's side row, dropped (hypothesis, stop 47)
    data=b"epoch: 0001, step: 54 loss is 4.52\n[auc-dnn3] 2021-10-02 20:13:30,249 (trainer:653) INFO: 4epoch:train:"
    b"201-225batch: l1_loss=0.252, mse_loss=0.070, loss=0.345, optim0_lr0=1.000e-03\n"
    b"epoch: 0001 step: 123456789012, loss is 4.52\n",
    block_min=5,
)
@example(  # another loop's rows: a counter to a total no epoch row counts to (GluonNLP's dev pass, round 12)
    data=b"[Epoch 3 Batch 78/82] loss=0.3076, lr=0.0000083\n[Epoch 3 Batch 80/82] loss=0.3071, lr=0.0000083\n"
    b"[Epoch 3 Batch 82/82] loss=0.3070, lr=0.0000083\n[Batch 10/35] loss=0.7468, metrics:accuracy:0.6750\n",
    block_min=1,
)
@example(  # an estimate line (its own shape, naming val_loss) after rows naming none: an evaluation row (hypothesis)
    data=b"epoch: 0001, step: 1910, loss is 0\nepoch: 0001 step: 1391, loss is .5\n"
    b"epoch: 0001, step: 1513, loss is 0.0\nepoch: 0001 step: 0 loss is nan\r\n"
    b"\x1b[32mstep 1/0 train_loss=2.297702297702298 val_loss=4.52\x1b[0m\n",
    block_min=64,
)
def test_one_shot_rows_match_line_by_line_reference(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, block_min: int
) -> None:
    root = tmp_path_factory.mktemp("oneshot")
    (root / "worker_0.log").write_bytes(data)
    snap = read_run(root, settings=ReaderSettings(block_min=block_min, compiled_min=0))
    assert _bits(_metric_rows(snap)) == _bits(reference_rows(data))
    assert _extras_match(snap, data)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    data=log_text(),
    cuts=st.lists(st.integers(min_value=0, max_value=1 << 14), max_size=10),
    read_block=st.sampled_from([300, 512, 4096]),
    prefetch_min=st.sampled_from([1, 100, 1 << 20]),
    block_min=st.sampled_from([1, 3, 64]),
)
@example(  # two NaN rows naming two different steps are two rows, not a row and its echo (drawn by hypothesis)
    data=b" iteration      700/    3000 | learning rate 6.300E-06 | lm loss NAN | loss scale 64.0 |\n"
    b" iteration      0/  0 | elapsed time per iteration (ms): 865.2 | learning rate: 4.52 | lm loss: nan |"
    b" loss scale: 1.0 | grad norm: 0.231 |\nEpoch 1 completed with avg loss: 2.4179, learning rate: 0.003\n",
    cuts=[],
    read_block=300,
    prefetch_min=1,
    block_min=1,
)
@example(  # a frame whose traceback header was cut opens the traceback on every path: the indented line is its frame
    data=b'[rank2]:   File "/lus/scratch/builder/pytorch_dist_resnet_benchmark.py", line 301, in <module>\n'
    b"\tepoch: 1 step: 9, loss is 9.0\n",
    cuts=[],
    read_block=300,
    prefetch_min=1,
    block_min=1,
)
@example(  # a tagged traceback header, rows, then an untagged row naming rank 0 (hypothesis, stop 47)
    data=b"epoch: 0, step: 0, loss is 4.52\nepoch: 0001, step: 0, loss is 4.52\n"
    b"[rank2]: Traceback (most recent call last):\n"
    b"epoch: 0, step: 0, loss is 4.52\nepoch: 0, step: 0, loss is 4.52\nepoch: 0, step: 0, loss is 4.52\n"
    b"epoch: 0001, step: 0, loss is 4.52\n2023-01-30 18:47:07,107 DEBUG TRAIN Batch 4/203700 loss 12.646465 loss_att "
    b"10.921429 lr 0.00032621 rank 0\n",
    cuts=[],
    read_block=300,
    prefetch_min=1,
    block_min=1,
)
def test_chunked_writes_and_reads_match_one_shot(
    tmp_path_factory: pytest.TempPathFactory,
    data: bytes,
    cuts: list[int],
    read_block: int,
    prefetch_min: int,
    block_min: int,
) -> None:
    """Any write chunking x tiny read blocks (several per refresh, next one prefetched) = one-shot read."""
    one_shot_dir = tmp_path_factory.mktemp("ref")
    (one_shot_dir / "worker_0.log").write_bytes(data)
    one_shot = read_run(one_shot_dir)
    root = tmp_path_factory.mktemp("chunks")
    path = root / "worker_0.log"
    path.write_bytes(b"")
    state = RunReader(root, settings=_small_blocks(read_block, prefetch_min, block_min))
    state.refresh()
    prev = 0
    for p in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        with open(path, "ab") as f:
            f.write(data[prev:p])
        prev = p
        state.refresh()
    snap = state.snapshot()
    if max((len(line) for line in data.split(b"\n")), default=0) < read_block - 1:  # no line was dropped
        assert _bits(_metric_rows(snap)) == _bits(reference_rows(data))
        assert _bits(_metric_rows(snap)) == _bits(_metric_rows(one_shot))
        cols = ["epoch", "step", "epoch_time_ms", "step_time_ms", "offset"]
        assert snap.timings[cols].astype(str).values.tolist() == one_shot.timings[cols].astype(str).values.tolist()
        ecols = ["kind", "message", "context", "offset"]
        assert snap.errors[ecols].astype(str).values.tolist() == one_shot.errors[ecols].astype(str).values.tolist()


@settings(max_examples=300, deadline=None)
@given(text=value_text())
def test_bulk_decimals_are_bit_identical_to_float(text: bytes) -> None:
    buf = b"\n" + text + b"\n" + b" " * 64
    values, length, ok = logs.decimals(np.frombuffer(buf, dtype=np.uint8), np.array([1]))
    whole = bool(ok[0]) and int(length[0]) == len(text)  # what _lm_block requires (then b"\n" follows)
    if whole:
        assert struct.pack("<d", values[0]) == struct.pack("<d", float(text))
    else:  # only nan/inf/exponents/over-long texts (or not a number at all) are left to the exact path
        body = text[1:] if text[:1] in (b"+", b"-") else text
        digits = body.replace(b".", b"", 1)
        assert not (digits.isdigit() and len(text) <= 24)


@settings(max_examples=400, deadline=None)
@given(
    mantissa=st.one_of(
        st.integers(1 << 53, 10**18 - 1),
        st.integers(0, 10**19),
        st.sampled_from([(1 << 53) + 1, (1 << 54) + 2, 9007199254740993, 10**17 + 1]),
    ),
    dot=st.integers(0, 19),
    sign=st.sampled_from(["", "-", "+"]),
)
def test_long_mantissas_are_bit_identical_to_float(mantissa: int, dot: int, sign: str) -> None:
    """17-18 digit mantissas (MindSpore's repr floats) take the long-double path; midpoints and longer
    ones the string cast: always the same double as `float(text)`."""
    digits = str(mantissa)
    dot = min(dot, len(digits))
    text = (sign + digits[: len(digits) - dot] + "." + digits[len(digits) - dot :]).encode()
    buf = b"\n" + text + b"\n" + b" " * 64
    values, length, ok = logs.decimals(np.frombuffer(buf, dtype=np.uint8), np.array([1]))
    assert ok[0] and length[0] == len(text)
    assert struct.pack("<d", values[0]) == struct.pack("<d", float(text))


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(
        st.one_of(value_text(), st.binary(max_size=30), st.sampled_from([b"+", b"-", b".", b"1-2", b"--1"])),
        min_size=1,
        max_size=40,
    )
)
def test_matrix_and_column_decimals_agree(texts: list[bytes]) -> None:
    """The two forms of `decimals` (small batches / big batches) give the same values, lengths and ok."""
    buf = b"\n" + b"\n".join(texts) + b"\n" + b" " * 64
    starts = np.cumsum([0] + [len(x) + 1 for x in texts[:-1]]) + 1
    chunk = np.frombuffer(buf, dtype=np.uint8)
    v1, l1, ok1 = logs.decimals_matrix(chunk, starts)
    v2, l2, ok2 = logs.decimals_columns(chunk, starts)
    assert ok1.tolist() == ok2.tolist() and l1[ok1].tolist() == l2[ok2].tolist()
    assert _bits([v1[ok1]]) == _bits([v2[ok2]])


def test_full_float_repr_loss_lines_take_the_bulk_path() -> None:
    """MindSpore prints `loss is 2.3139476776123047` (17 digits): numpy reads them all, exactly."""
    values = [2.3139476776123047, -0.00012345678901234567, 1234567.8901234567, 0.1, 5e-324 * 0 + 1.0]
    lines = [b"epoch: 1 step: %d, loss is %r\n" % (i + 1, v) for i, v in enumerate(values)]
    buf = b"\n" + b"".join(lines) + b" " * 64
    starts = np.array([1 + sum(len(x) for x in lines[:i]) for i in range(len(lines))])
    take, rows = logs.lm_block(buf, starts, 0, float("nan"))
    assert take.all()
    assert [struct.pack("<d", v) for v in rows[:, logs.ROW_KEYS.index("loss")]] == [
        struct.pack("<d", v) for v in values
    ]


def test_values_float_rejects_fall_back_instead_of_crashing(tmp_path: Path) -> None:
    """`loss is 1e` / `loss is 1.5.2` are not numbers: no row, in bulk and one by one (issue 12 item 7)."""
    lines = [b"epoch: 1 step: %d, loss is %s\n" % (i, v) for i, v in enumerate([b"1e", b"1.5.2", b"2.5"] * 40)]
    (tmp_path / "worker_0.log").write_bytes(b"".join(lines))
    snap = read_run(tmp_path)
    assert snap.metrics["loss"].tolist() == [2.5] * 40
    assert _bits(_metric_rows(snap)) == _bits(reference_rows(b"".join(lines)))


def test_bulk_rows_keep_order_around_timing_and_errors(tmp_path: Path) -> None:
    """TimeMonitor lines take the epoch/step of the loss row just before them, even inside a bulk block."""
    out = []
    for epoch in (1, 2, 3):
        out += [b"[WARNING] ME(1:2,MainProcess):x [a.py:1] noise\n"] * 3
        out += [b"epoch: %d step: %d, loss is %.3f\n" % (epoch, s, 1 / s) for s in range(1, 101)]
        out.append(b"Train epoch time: 10.0 ms, per step time: 0.1 ms\n")
    out.append(b'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\n')
    out += [b"epoch: 4 step: %d, loss is 0.5\n" % s for s in range(1, 80)]
    out.append(b"RuntimeError: boom\n")
    data = b"".join(out)
    (tmp_path / "worker_0.log").write_bytes(data)
    snap = read_run(tmp_path)
    assert len(snap.metrics) == 379
    assert snap.timings[["epoch", "step"]].values.tolist() == [[1.0, 100.0], [2.0, 100.0], [3.0, 100.0]]
    assert snap.errors["kind"].tolist() == ["exception"]
    assert 'File "t.py"' in snap.errors["context"].iloc[0] and "epoch: 4 step: 79" in snap.errors["context"].iloc[0]
    assert snap.metrics["offset"].tolist() == [r[-1] for r in reference_rows(data)]
    assert snap.metrics["offset"].dtype == np.int64 and snap.metrics["rank"].dtype == np.int64
    last = snap.ranks.iloc[0]
    assert (last["last_epoch"], last["last_step"], last["n_loss"]) == (4.0, 79.0, 379)
    assert math.isclose(last["last_loss"], 0.5)


def test_prefetching_reader_matches_plain_reads_on_a_multi_block_file(tmp_path: Path) -> None:
    lines = []
    for i in range(20000):
        lines.append(b"[INFO] ME(1:2,MainProcess):x [a.py:1] chatter %d\n" % i)
        if i % 7 == 0:
            lines.append(b"epoch: 1 step: %d, loss is %r\n" % (i, 1.0 / (i + 1)))
        if i % 5000 == 4999:
            lines.append(b"Train epoch time: 1.0 ms, per step time: 0.5 ms\n")
    data = b"".join(lines)
    (tmp_path / "worker_0.log").write_bytes(data)
    plain = read_run(tmp_path)
    prefetched = read_run(tmp_path, settings=_small_blocks(64 << 10, 1, 64))
    assert _bits(_metric_rows(prefetched)) == _bits(_metric_rows(plain)) == _bits(reference_rows(data))
    assert prefetched.timings.astype(str).values.tolist() == plain.timings.astype(str).values.tolist()


_SCAN_BYTES = st.sampled_from(
    [
        *(b"\n", b"\r", b"[", b"E", b"C", b"W", b"I", b"a", b" ", b"[INFO] 2", b"[INFO] ", b"2"),
        *(b"l", b"L", b"o", b"O", b"s", b"S", b"v", b"V", b"loss", b"LoSs", b"lo", b"ss", b"val", b"VAL", b"va"),
        # the other loss-naming keywords (issue 30): `xent`, `ppl`, `perplexity`, split and in any case
        *(b"x", b"X", b"p", b"P", b"e", b"n", b"t", b"xent", b"XeNt", b"xen", b"ppl", b"PPL", b"pp", b"pl"),
        *(b"perplexity", b"PERPLEXITY", b"perple", b"perp", b"lexity"),
        # a loss named cross entropy (TF): `cross_entropy`, `cross entropy`, split, in any case, and near misses
        *(b"cross_entropy", b"Cross Entropy", b"CROSS_ENTROPY", b"cr", b"cro", b"cross", b"ross", b"_entropy"),
        *(b" entropy", b"entropy", b"ENTRO", b"py", b"crosss", b"\x7f", b"\x00", b"oss"),
        # llm.c's `s:0 trl:` / `s:0 tel:` at a line's start (lexicon.KEYED_START), split, in any case, near misses
        *(b"s:", b"S:", b"s:0 trl:", b"S:12 TEL:", b"s:3 tel:", b"s: trl:", b"s:1  trl:", b"s:1 trl", b"s:1 tal:"),
        *(b"trl:", b"tel:", b"TeL:", b" t", b"rl:", b"el:", b"s:0", b"12 ", b"s:0 t"),
        # Marian's `[2017-10-24 10:08:52] Ep. 1 : Up. 590 :` at a line's start (KEYED_START), split, near misses
        *(b"[2017-10-24 10:08:52] Ep. 1 : Up. 590 :", b"[2017-10-24 10:08:52] ", b"EP. 12 : uP. 3 :", b"Ep. ", b"Up. "),
        *(b"[2017-10-24 10:08:5] Ep. 1 : Up. 5 :", b" : Up. ", b"[2017-10-24", b" 10:08:52]", b"Ep. 1 : Up. :"),
        # build-nanogpt's `0 train 11.226211` at a line's start (KEYED_START), split, in any case, near misses
        *(b"0 train 1", b"12 TRAIN 3", b" train ", b"train", b"0 train x", b"0  train 1", b"0 train", b"7 trains 1"),
        # PaddlePaddle v1's `Pass: 0, Batch: 1, ` at a line's start (KEYED_START), split, in any case, near misses
        *(b"Pass: 0, Batch: 1, ", b"PASS 12, batch 3, ", b"pass", b"Pass:", b", Batch: ", b", batch 7", b", "),
        *(b"Pass:  0, Batch: 1, ", b"Pass: 0,Batch: 1, ", b"Pass: 0, Batch: 1,", b"Pass:: 0, ", b"Passes 0, Batch 1, "),
        # YOLACT's `[  0]     520 || `, char-RNN's `5000 5% (0m 12s) `, a torch scalar's `tensor(3.2` (KEYED_START),
        # near misses
        *(
            b"[  0]     520 || ",
            b"[12] 3 || ",
            b"[100] 7 || ",
            b"[ 0]",
            b"[1 0] 5 || ",
            b"] 5 || ",
            b" || ",
            b"[  0]520 || ",
            b"[ 0] 5 |",
            b"[ x] 5 || ",
        ),
        *(
            b"tensor(3.2",
            b"Tensor(-1",
            b"tensor(nan",
            b"tensor([[",
            b"tensor(",
            b"tensor( 1",
            b"tensors(1",
            b"tensor(na",
        ),
        *(b"5000 5% (0m 12s) ", b"10 1% (", b"1m 4s) ", b"7 7%  (0m 1s) ", b"5 5% (0m 1s)", b"5 5% (1h 2s) ", b"% ("),
        # launcher tags that make a `[` line a candidate (issue 30): `[1,2]<stderr>:`, `[rank6]:`, `[host:pid] `
        *(b"1", b",", b":", b"]", b"-", b".", b"_", b"rank", b"[1,2]", b"[rank6]:", b"[uk:60506] ", b"[uk:6]"),
        *(b"[6]<", b"<", b"[12]"),  # horovodrun's `[6]<stderr>:`
        # a process group's message, its prefix cut (`[Rank 0] Watchdog ...`, VITA-MLLM/VITA-Audio#34), near misses
        *(b"[Rank 0] ", b"[Rank ", b"Rank", b"[Rank -1]", b"[Rank0", b"[RANK 3] ", b"[Rankx"),
        # a `[date]` stamp before an error level, maybe after one word (DeepSpeed's launcher, torch's elastic agent)
        *(b"[2023-05-11 07:34:44,846] ", b"[2", b"] ", b"[ERROR]", b"ERROR", b"FATAL", b"CRITICAL", b"CRITICA"),
        *(b"torch.api:", b"x" * 30),
        # ... or a C++ logger's `Error:` after it (Marian's `[date] Error: `), and near misses
        *(b"Error:", b"Error", b"Erro", b"rror:", b"Error-", b"ERRO"),
        # ... or glued to it, maybe after one bracketed word (Hydra's `[date][name][ERROR] - `)
        *(b"[2025-10-31 05:07:11,062]", b"[__main__]", b"][", b"[E", b"[C", b"[INFO]"),
    ]
)
_RE_KEYWORD_LINE = re.compile(rb"(?i)" + b"|".join(KEYWORDS))
_RE_KEYED_START = re.compile(rb"(?i)" + KEYED_START)


def _reference_scan(data: bytes, keywords: bool) -> tuple[list[int], list[int], list[int]]:
    """What a block scan must find, by the definitions: RE_SCAN's matches, plus (keywords) every line
    after the first holding one of the lexicon's KEYWORDS in any case or beginning as its KEYED_START; every
    newline; the keyword lines."""
    newlines = [i for i, c in enumerate(data) if c == 10]
    by_prefix = {m.start() + 1 for m in logs.RE_SCAN.finditer(data)}
    lines = [(nl + 1, data.find(b"\n", nl + 1)) for nl in newlines if nl + 1 < len(data)]
    kw = [
        ls
        for ls, le in lines
        if keywords and (_RE_KEYWORD_LINE.search(data, ls, le) or _RE_KEYED_START.match(data, ls, le))
    ]
    return sorted(by_prefix.union(kw)), newlines, kw


@settings(max_examples=400, deadline=None)
@given(
    body=st.lists(_SCAN_BYTES, max_size=300).map(b"".join),
    pad=st.binary(max_size=8),
    lead=st.integers(0, 7),
    keywords=st.booleans(),
    split=st.booleans(),
)
def test_compiled_block_scan_matches_the_definitions(
    body: bytes, pad: bytes, lead: int, keywords: bool, split: bool
) -> None:
    """core.logs.tokens.linescan (eight bytes at a time, keywords split across words, a buffer that runs past
    `end`, any alignment, in one pass or two halves on two threads) and a small read's scan find exactly
    the reference's candidates, newlines and keyword lines."""
    data = body + b"\n"
    raw = bytearray(b"x" * lead + data + pad)  # a reused read buffer is longer than the complete lines in it
    chunk = np.frombuffer(raw, dtype=np.uint8)[lead:]
    expected = _reference_scan(data, keywords)
    starts, newlines, kw_lines = scan_block(chunk, len(data), keywords, split)
    assert (starts.tolist(), newlines.tolist(), kw_lines.tolist()) == expected
    small = logs.scan_by_definition(raw[lead:], len(data), keywords, bytearray())  # a small read's path
    assert tuple(a.tolist() for a in small) == expected


# Hydra's `[%(asctime)s][%(name)s][%(levelname)s] - ` glues its fields (facebookresearch/map-anything#89's log)
_HYDRA_INFO = (
    b"[2025-10-31 05:07:02,550][__main__][INFO] - Epoch: [7]  [ 600/2916]  eta: 0:54:53  lr: 0.000072  epoch: "
    b"7.2023 (7.1029)  loss: ..... time: 1.3483  data: 0.0002  max mem: 137223"
)
_HYDRA_ERROR = b"[2025-10-31 05:07:11,062][__main__][ERROR] - Error executing job with overrides: ['machine=hpc_train']"


@pytest.mark.parametrize("split", [False, True])
def test_a_glued_stamp_at_error_level_is_a_candidate_and_at_info_is_not(split: bool) -> None:
    """Hydra's stamped lines: the ERROR one (its job's failure) is a candidate of the compiled scan and of a small
    read's, its INFO chatter is not; so is the level glued to the stamp with no name between."""
    lines = [
        b"start",
        _HYDRA_INFO,
        _HYDRA_ERROR,
        b"[2025-10-31 05:07:11,062][CRITICAL] - x",
        b"[2025-10-31][a][INFO] y",
    ]
    data = b"\n".join(lines) + b"\n"
    at = [data.index(line) for line in lines]
    chunk = np.frombuffer(bytearray(data), dtype=np.uint8)
    starts = scan_block(chunk, len(data), False, split)[0].tolist()
    assert starts == [at[2], at[3]] == _reference_scan(data, False)[0]
    assert logs.scan_by_definition(bytearray(data), len(data), False, bytearray())[0].tolist() == starts


# Marian's spdlog lines (marian-nmt/marian-dev#439's pasted log, tests/fixtures/real_logs/marian-valid-lines-only-then-
# tcmalloc-and-cuda-oom-abort_marian-dev-439): its `Error: ` level after the stamp, and its other stamped lines
_MARIAN = [
    b"[2019-04-15 08:29:06] Saving model weights and runtime parameters to model/ens1/model.npz.best-perplexity.npz",
    b"[2019-04-15 08:29:08] [valid] Ep. 2 : Up. 500 : perplexity : 8335 : new best",
    b"[2019-04-15 08:34:14] Error: CUDA error 2 'out of memory' - /data/home/mt/tools/marian/src/tensors/gpu/"
    b"device.cu:32: cudaMalloc(&data_, size)",
    b"[2019-04-15 08:34:14] Error: Aborted from virtual void marian::gpu::Device::reserve(size_t) in "
    b"/data/home/mt/tools/marian/src/tensors/gpu/device.cu:32",
]


@pytest.mark.parametrize("split", [False, True])
def test_a_stamp_before_a_cpp_logger_s_error_word_is_a_candidate(split: bool) -> None:
    """Marian's `[date] Error: ` lines (its CUDA out-of-memory and its abort) are candidates of the compiled scan
    and of a small read's; its stamped save and `[valid]` lines are not (no keyword scan here), nor `Error` without
    the colon."""
    lines = [b"start", *_MARIAN, b"[2019-04-15 08:34:14] Errors counted: 0"]
    data = b"\n".join(lines) + b"\n"
    at = [data.index(line) for line in lines]
    chunk = np.frombuffer(bytearray(data), dtype=np.uint8)
    starts = scan_block(chunk, len(data), False, split)[0].tolist()
    assert starts == [at[3], at[4]] == _reference_scan(data, False)[0]
    assert logs.scan_by_definition(bytearray(data), len(data), False, bytearray())[0].tolist() == starts


@settings(max_examples=200, deadline=None)
@given(body=st.lists(_SCAN_BYTES, max_size=120).map(b"".join), keywords=st.booleans())
def test_two_ranges_meeting_at_any_newline_scan_as_the_whole(body: bytes, keywords: bool) -> None:
    """The two halves of a split scan may meet at any newline, at any alignment: end to end they give the
    whole block's candidates, newlines and keyword lines."""
    from core.logs.tokens.linescan import scan_range

    data = body + b"\n"
    a = np.frombuffer(data, dtype=np.uint8)
    words = words_of(a)
    whole = [x.tolist() for x in scan_range(a, words, 0, len(data), len(data), keywords)]
    assert tuple(whole) == _reference_scan(data, keywords)
    for mid in [i + 1 for i, c in enumerate(data) if c == 10]:
        first = scan_range(a, words, 0, mid, len(data), keywords)
        second = scan_range(a, words, mid, len(data), len(data), keywords)
        assert [x.tolist() + y.tolist() for x, y in zip(first, second, strict=True)] == whole, mid


def test_the_compiled_scan_finds_every_keyword_of_the_lexicon() -> None:
    """The loss-naming words are data in one place (lexicon.KEYWORDS); the compiled scan tests them by hand, so a
    word added there and not to the scan (or the other way round) is caught here, not by a missed log line."""
    assert sorted(KEYWORDS_TESTED) == sorted(KEYWORDS)


@pytest.mark.parametrize(
    "keyword",
    [
        b"loss",
        b"LoSS",
        b"val",
        b"VAL",
        b"xent",
        b"XENT",
        b"perplexity",
        b"Perplexity",
        b"cross_entropy",
        b"Cross Entropy",
    ],
)
def test_compiled_block_scan_finds_a_keyword_at_every_offset_in_a_word(keyword: bytes) -> None:
    """The scan skips eight bytes at a time: a keyword split across two words (its `ss` pair, its `v`
    last in a word) must still make its `[INFO]` line a candidate, at each of the 16 offsets."""
    for offset in range(16):
        data = b"first line\n[INFO] " + b"x" * offset + keyword + b": 1.5" + b" " * 20 + b"\n[WARNING] noise\n"
        got = scan_block(np.frombuffer(data, dtype=np.uint8), len(data))
        assert [g.tolist() for g in got] == list(_reference_scan(data, True)), offset
        assert got[0].tolist() == [11], offset  # the [INFO] line, by its keyword; not the [WARNING] one


def test_cross_entropy_is_a_keyword_only_with_its_own_separator() -> None:
    """`cross_entropy` / `cross entropy` (TF's loss names) are keywords; the small read's search lower-cases by OR-ing
    0x20, which maps a NUL onto the space and `_` onto DEL: neither must read as the keyword, on either path."""
    for middle, held in ((b"_", True), (b" ", True), (b"\x00", False), (b"\x7f", False), (b"-", False)):
        data = b"first line\n[INFO] Cross" + middle + b"Entropy 4.51\n[WARNING] noise\n"
        expected = _reference_scan(data, True)
        assert bool(expected[2]) is held, middle
        got = scan_block(np.frombuffer(data, dtype=np.uint8), len(data))
        assert [g.tolist() for g in got] == list(expected), middle
        small = logs.scan_by_definition(bytearray(data), len(data), True, bytearray())
        assert [g.tolist() for g in small] == list(expected), middle


_NUMBER_TEXTS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(lambda v: repr(v).encode()),
    st.floats(min_value=-1e6, max_value=1e6).map(lambda v: f"{v:.6f}".encode()),
    st.floats(min_value=-1e30, max_value=1e30).map(lambda v: f"{v:.6E}".encode()),  # Megatron's lm loss
    st.from_regex(rb"\A[+-]?[0-9]{0,20}\.?[0-9]{0,20}([eE][+-]?[0-9]{1,4})?\Z"),
)


@settings(max_examples=600, deadline=None)
@given(texts=st.lists(_NUMBER_TEXTS, min_size=1, max_size=20))
def test_compiled_numbers_are_float_bit_for_bit_or_left_to_the_exact_path(texts: list[bytes]) -> None:
    """Every span the compiled reader takes is `float(text)` bit for bit; short decimals (what suites
    print: `5.547178`, `2.504220E+00`) are always taken; the rest is left to numpy's exact cast."""
    buf = b" ".join(texts) + b"\n"
    pos = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]]).astype(np.int64)
    width = np.array([len(t) for t in texts], dtype=np.int64)
    values = np.full(len(texts), np.nan)
    ok = fixed_numbers(np.frombuffer(buf, dtype=np.uint8), pos, width, values)
    for text, taken, value in zip(texts, ok.tolist(), values.tolist(), strict=True):
        if taken:
            assert struct.pack("<d", value) == struct.pack("<d", float(text)), text
        elif re.fullmatch(rb"-?[0-9]{1,9}\.[0-9]{1,6}(E[+-](0[0-9]|1[0-6]))?", text):  # |power| <= 22
            raise AssertionError(f"{text!r}: a short decimal must be read by the compiled path")


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.sampled_from([b"loss: 1.5", b"loss: 12.5", b"top1: 0.5", b"top5: 0.5", b"lr: 3e-4", b"x"]),
        min_size=1,
        max_size=30,
    ),
)
def test_compiled_shape_match_is_the_first_learnt_shape_with_the_same_masked_bytes(lines: list[bytes]) -> None:
    """A line takes the first template whose shape (digits as `#`) and digits inside words (`top1` is
    not `top5`) it has, as the byte-matrix comparison it replaced did."""
    from core.logs.rows.linetemplates import LineTemplate, shape_key

    shapes = Shapes()
    learnt = [b"loss: 1.5", b"top1: 0.5", b"lr: 3e-4"]
    for line in learnt:
        digits = ((3, ord("1")),) if line.startswith(b"top") else ()
        shapes.add(shape_key(line), LineTemplate(columns=(), constants=(), word_digits=digits, keys=()))
    buf = b"\n" + b"\n".join(lines) + b"\n"
    nl = [i for i, c in enumerate(buf) if c == 10]
    starts, ends = np.array(nl[:-1], dtype=np.int64) + 1, np.array(nl[1:], dtype=np.int64)
    a = np.frombuffer(buf, dtype=np.uint8)
    got = match_shapes(a, words_of(a), starts, ends, *shapes.packed())
    expected = [
        next(
            (t for t, k in enumerate(learnt) if shape_key(k) == shape_key(line) and shapes.templates[t].applies(line)),
            -1,
        )
        for line in lines
    ]
    assert got.tolist() == expected


@settings(max_examples=500, deadline=None)
@given(st.binary(min_size=8, max_size=8))
def test_eight_bytes_at_once_take_the_shape_of_each_byte(word: bytes) -> None:
    """Digits become `#` in a whole word at once, exactly per byte (bytes of 0x80 and up, `/`, `:` kept)."""
    from core.logs.rows.linetemplates import shape_key
    from core.logs.tokens.linescan import as_shape

    got = as_shape(np.frombuffer(word, dtype=np.uint64)[0])
    assert int(got) == int(np.frombuffer(shape_key(word), dtype=np.uint64)[0])


_LONG_SHAPES = [
    b"[INFO] 2026-11-23 19:14:00,332 print_output_info: { Epoch:[  1/  4], step:[   12/  300], loss:[5.5/5.5] }",
    b" iteration       12/     200 | consumed samples:  1024 | lm loss: 2.296138E+00 | grad norm: 0.231 |",
    b"[2026-11-23 21:22:20] mindcv.utils.callbacks INFO - Epoch: [1/3], batch: [1/8], loss: 1.533790",
    b"epoch: 1 step: 7, loss is 2.3139476776123047 top1_acc 0.5",
]


@settings(max_examples=300, deadline=None)
@given(
    picks=st.lists(
        st.tuples(
            st.integers(0, len(_LONG_SHAPES) - 1),
            st.lists(st.tuples(st.integers(0, 200), st.binary(min_size=1, max_size=1)), max_size=3),
        ),
        min_size=1,
        max_size=12,
    ),
    lead=st.integers(0, 7),
)
def test_compiled_shape_match_of_long_lines_at_any_alignment(picks: list, lead: int) -> None:
    """Long lines, compared eight bytes at a time from any alignment, with bytes changed anywhere (a digit
    for a digit keeps the shape; anything else may not): the first learnt shape they have, or none."""
    from core.logs.rows.linetemplates import LineTemplate, shape_key

    shapes = Shapes()
    for line in _LONG_SHAPES:
        shapes.add(shape_key(line), LineTemplate(columns=(), constants=(), word_digits=(), keys=()))
    lines = []
    for which, changes in picks:
        line = bytearray(_LONG_SHAPES[which])
        for at, byte in changes:
            if byte != b"\n":
                line[at % len(line)] = byte[0]
        lines.append(bytes(line))
    raw = bytearray(b"x" * lead + b"\n" + b"\n".join(lines) + b"\n")
    a = np.frombuffer(raw, dtype=np.uint8)
    nl = [i for i, c in enumerate(raw) if c == 10]
    starts, ends = np.array(nl[:-1], dtype=np.int64) + 1, np.array(nl[1:], dtype=np.int64)
    got = match_shapes(a, words_of(a), starts, ends, *shapes.packed())
    keys = [shape_key(x) for x in _LONG_SHAPES]
    assert got.tolist() == [keys.index(shape_key(x)) if shape_key(x) in keys else -1 for x in lines]


def test_compiled_block_scan_on_short_lines_grows_its_outputs() -> None:
    """A block of one-byte lines has more lines than the first guess of the outputs' size."""
    data = b"a\n" * 5000 + b"loss 1\n"
    starts, newlines, kw_lines = scan_block(np.frombuffer(data, dtype=np.uint8), len(data))
    assert len(newlines) == 5001 and starts.tolist() == list(range(2, 10002, 2)) and kw_lines.tolist() == [10000]


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=40),
    text=st.binary(min_size=1, max_size=12),
    pos=st.lists(st.integers(min_value=-3, max_value=45), max_size=20),
)
def test_word_literal_check_matches_slicing(data: bytes, text: bytes, pos: list[int]) -> None:
    if pos:
        data = data[: pos[0] % (len(data) + 1)] + text + data[pos[0] % (len(data) + 1) :]
    chunk = np.frombuffer(data, dtype=np.uint8)
    got = logs.literal_at(chunk, np.array(pos, dtype=np.int64), text)
    assert got.tolist() == [p >= 0 and data[p : p + len(text)] == text for p in pos]


def test_short_buffer_with_bracketed_candidates_does_not_crash(tmp_path: Path) -> None:
    """A file shorter than the bulk path's windows (found by hypothesis: it raised ValueError)."""
    (tmp_path / "worker_0.log").write_bytes(b"[Epoch 3]\n[Epoch 3]\n")
    snap = read_run(tmp_path, settings=ReaderSettings(block_min=1))
    assert snap.metrics.empty and snap.errors.empty


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    lines=st.lists(
        st.one_of(
            st.sampled_from(PLAIN), st.sampled_from(PLAIN), st.sampled_from(RARE), st.sampled_from(OTHER), loss_line()
        ),
        min_size=1,
        max_size=60,
    ),
    padding=st.integers(700, 1500),
)
def test_big_chunks_skip_plain_lines_exactly(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], padding: int
) -> None:
    """A chunk big enough for the numpy path (>= 16 KB, many candidate lines): rows, timings and errors
    are exactly those of reading every candidate line one by one."""
    root = tmp_path_factory.mktemp("plain")
    filler = [PLAIN[i % len(PLAIN)] for i in range(padding)]
    step = max(1, len(filler) // len(lines))
    body = []
    for i, line in enumerate(lines):  # the given lines spread among the filler
        body += [*filler[i * step : (i + 1) * step], line]
    data = b"".join(body + filler[len(lines) * step :])
    (root / "worker_0.log").write_bytes(data)
    bulk = read_run(root)
    one_by_one = read_run(root, settings=ReaderSettings(block_min=1 << 30))
    assert len(data) >= 16 << 10
    assert _bits(_metric_rows(bulk)) == _bits(_metric_rows(one_by_one))
    cols = ["kind", "message", "offset", "rank"]
    assert bulk.errors[cols].equals(one_by_one.errors[cols])
    assert bulk.timings.equals(one_by_one.timings)


def test_a_fatal_line_among_many_plain_lines_is_found(tmp_path: Path) -> None:
    data = b"".join(PLAIN * 200) + b"Segmentation fault (core dumped)\n" + b"".join(PLAIN * 200)
    (tmp_path / "worker_0.log").write_bytes(data)
    errors = read_run(tmp_path).errors
    assert errors["message"].tolist() == ["Segmentation fault (core dumped)"]


# What `Parser.parse_line` acts on in a line without a keyword, as one regex (the definition the literal search
# of core.logs.tokens.plain must cover): an error prefix, a traceback, an exception line, a timing, a fatal line.
_RE_WORTH_DEFINITION = re.compile(
    rb"(?m)^(?:\[ERROR\]|\[CRITICAL\]|\[EXCEPTION\]|Traceback|"
    rb"[\w.]*(?:Error|Exception|Interrupt|Exit|Failure)(?::|\r?$))|step time: |per step time|"
    + failures_quick().pattern
)


_LINE_PARTS = st.lists(
    st.sampled_from(
        [
            *(t.decode() for t in PLAIN),
            "ValueError: x",
            "KeyboardInterrupt",
            "EI0002: wait",
            "Killed",
            "Segmentation fault (core dumped)",
            "HCCL timed out",
            "Timeout",
            "TIMEOUT",
            "per step time: 2 ms",
            "srun: error: n1: task 3: Exited",
            "process rank 3 with",
            "Fatal Python error",
            "[ERROR] x",
            "Traceback (most recent call last):",
            "double free or corruption",
            # issue 30's kinds
            "E39999: x",
            "Process received signal",
            "Signal: Bus error (7)",
            "Call runtime rtStreamSynchronize error.",
            "Sync default stream failed",
            "Allocate output memory failed",
            "NPU out of memory",
            "NCCL error",
            "ncclSystemError",
            "[E1206 1:2 ProcessGroupNCCL.cpp:1] Exception",
            "failed (exitcode: 1) local_rank: 2 (pid: 3)",
            "ime Out",
            "iming out",
            " ",
            ":",
        ]
    )
    | st.text(alphabet="AEIKSTacdeilmnoprstu0123456789 ():.[]\r", max_size=12),
    min_size=1,
    max_size=6,
)
"""Lines made of parts that make a line worth reading, plain text and random letters."""


@settings(max_examples=500, deadline=None)
@given(_LINE_PARTS)
def test_plain_line_search_keeps_every_line_the_definition_would(parts: list[str]) -> None:
    """The literal search may keep more lines than the definition (`parse_line` then drops them), never fewer."""
    line = "".join(parts).replace("\n", " ").encode()
    if _RE_WORTH_DEFINITION.search(line):
        assert WORTH.positions(line), line


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE_PARTS, min_size=1, max_size=8), st.binary(max_size=3))
def test_compiled_plain_line_search_is_the_literal_search(lines: list[list[str]], lead: bytes) -> None:
    """`worth_lines` (a big read) keeps exactly the lines `bytes.find` keeps (a small read)."""
    texts = ["".join(parts).replace("\n", " ").encode() for parts in lines]
    buf = lead.replace(b"\n", b" ") + b"\n" + b"\n".join(texts) + b"\n"
    ls, pos = [], len(lead) + 1
    for text in texts:
        ls.append(pos)
        pos += len(text) + 1
    starts = np.array(ls, dtype=np.int64)
    ends = starts + np.array([len(t) for t in texts], dtype=np.int64)
    compiled = WORTH.compiled(buf, starts, ends)
    assert compiled.tolist() == WORTH.searched(buf, starts, ends).tolist()
    assert compiled.tolist() == [bool(WORTH.positions(t)) for t in texts]


def test_warm_up_loads_every_compiled_pass_a_read_uses(tmp_path: Path) -> None:
    """The dashboard warms the compiled passes at start: a read afterwards must not compile another
    version of them (argument types the warm-up did not cover would cost ~1 s at the first big read)."""
    from core.logs.tokens import linescan

    linescan.warm_up()
    kernels = (
        linescan.scan_kernel,
        linescan.newline_from,
        linescan.match_shapes,
        linescan.fixed_numbers,
        linescan.column_numbers,
        linescan.stamp_parts,
        linescan.worth_lines,
    )
    before = [list(k.signatures) for k in kernels]
    line = "[INFO] 2026-11-23 19:14:00,332 print_output_info: {{ Epoch:[ 1/ 4], step:[{s:5d}/ 300], loss:[{v}/{v}] }}"
    for rank in range(3):
        text = "\n".join(line.format(s=s, v=f"{5 - s / 100:.6f}") for s in range(1, 301))
        (tmp_path / f"worker_{rank}.log").write_text(text + "\n" + "".join(n.decode() for n in NOISE + PLAIN))
    snap = read_run(tmp_path, settings=ReaderSettings(compiled_min=0, shape_min=16, block_min=1))
    assert len(snap.metrics) == 900
    assert [list(k.signatures) for k in kernels] == before


@settings(max_examples=500, deadline=None)
@given(_LINE_PARTS, st.text(alphabet="#0123456789EI", max_size=8))
def test_a_shape_holds_worth_wherever_one_of_its_lines_does(parts: list[str], more: str) -> None:
    """Bulk reads ask once a shape whether its lines may hold a failure's part (`shape_holds_worth`), never
    once a line: the shape's answer is True wherever the line's is (CANN codes, `#` and digits included)."""
    from core.logs.rows.linetemplates import shape_key

    line = ("".join(parts) + more).replace("\n", " ").encode()
    if WORTH.positions(line):
        assert WORTH.shape_holds(shape_key(line)), line
