"""The loss table's wording flags (core.logs.rows.table `MetricTable.worded`, kept by core.logs.rows.wording's
`WordedRows`): each row's loss key wordings (an average's, a part's, training's) flagged once as ticks add rows (a
tick walked every asking file's offsets over the whole table three times: ~25 ms of the real-corpus folder's tick,
benchmarks/README_logs.md round 17) are `worded_rows` over the whole table, the old answer, at every tick: across a
file restarted (its rows dropped, the rest renumbered), the table grown past its room, offsets noted of rows the
table took before and rows repeating an offset."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs.bytes.discover import LogFile
from core.logs.rows.filestate import FileState
from core.logs.rows.reader import RunReader
from core.logs.rows.table import MetricTable
from core.logs.tokens.bulk import ROW_KEYS, Rows
from tests.helpers import REAL_LOGS

# Real logs whose rows carry each wording (their sources: each entry's SOURCE.md): T5-Finetune's `Average Train
# Loss:` after an epoch's batch rows, the GRPO trainer's `[step 50] avg_loss=` between `grpo_loss is X` rows, CMF's
# `Epoch N completed with avg loss:` (averages); the PPO trainer's `'policy_loss': X` dicts (a part) beside its
# `[step N] avg_loss=` lines; MixMatch's `Epoch N Train Loss:` beside `Epoch: N True Loss:` (training); noprop's
# `Epoch N done, avg loss: X` with its parts.
_ENTRIES = (
    "epoch-batch-loss-info-lines-bleu-after-epoch_t5-finetune-train-log",
    "grpo-loss-is-and-kl-is-negative-zero-rows-between-model-generations-ansi_posttraining-llm-small-grpo-log",
    "epoch-avg-loss-nan-then-finite-appended-restarts-chinese_models-cmf-fscil-3d",
    "ppo-step-pipe-loss-kl-plus-bracket-avg-loss-plus-policy-value-dicts-gemma-lora-mps_posttraining-llm-small-ppo-log",
    "epoch-train-loss-vs-true-loss-vs-val-acc-lines_mixmatchonsubset-nohup",
    "epoch-done-avg-loss-colon-parts_noprop-fashionmnist",
)
_LOGS = [next(p for p in (REAL_LOGS / name / "log").rglob("*") if p.is_file()).read_bytes() for name in _ENTRIES]
_WORDINGS = ((1, "averaged"), (2, "parts"), (4, "trained"))


def worded_rows(code: np.ndarray, offset: np.ndarray, files: list[tuple[int, Rows]], wording: str) -> np.ndarray | None:
    """The definition `WordedRows` is held to, over the whole table: per row (its file `code`, line `offset`), whether
    its file's `wording` list (`averaged`, `parts`, `trained`) holds its offset; None when no file has such a row."""
    out = None
    for c, rows in files:
        offsets = getattr(rows, wording)
        if offsets:
            out = np.zeros(len(code), dtype=bool) if out is None else out
            out |= (code == c) & np.isin(offset, offsets)
    return out


def _whole(table: MetricTable, rows_by_name: dict[str, Rows]) -> np.ndarray:
    """The old answer: `worded_rows` of each wording over the whole table, every file's offsets walked."""
    cols = table.frame_columns()
    cat = cols["file"]
    code, offset = np.asarray(cat.codes), np.asarray(cols["offset"])
    files = [(c, rows_by_name[name]) for c, name in enumerate(cat.categories)]
    out = np.zeros(len(table), dtype=np.int8)
    for bit, name in _WORDINGS:
        got = worded_rows(code, offset, files, name)
        if got is not None:
            out[got] |= bit
    return out


def _workers(reader: RunReader) -> dict[str, Rows]:
    return {s.info.rel: s.rows for s in reader.files.values() if s.info.role == "worker"}


def _tick(reader: RunReader, seen: dict[str, tuple[Rows, tuple[int, int, int], int]]) -> None:
    """refresh + snapshot, holding what `wording.note` notes to the rows the table takes in the same tick, each past
    the file's rows taken before (so a tick's new offsets are its new rows' alone: `WordedRows` checks it anyway,
    and flags a file afresh where it does not hold). `seen`: per file, its rows object (a relaunched file's is a new
    one, which may reuse a dropped object's `id`: compared by `is`), its offsets noted and rows taken."""
    reader.refresh()
    reader.snapshot()
    cols = reader.table.frame_columns()
    names, offset = np.asarray(cols["file"]), np.asarray(cols["offset"])
    for name, rows in _workers(reader).items():
        held, noted, taken = seen.get(name, (rows, (0, 0, 0), 0))
        if held is not rows:  # the file was written anew (a relaunch): its rows start over
            noted, taken = (0, 0, 0), 0
        mine = offset[names == name]
        new = [off for (_, wording), k in zip(_WORDINGS, noted, strict=True) for off in getattr(rows, wording)[k:]]
        assert set(new) <= set(mine[taken:].tolist())
        assert not new or not taken or min(new) > mine[:taken].max()
        seen[name] = (rows, (len(rows.averaged), len(rows.parts), len(rows.trained)), len(mine))


def test_the_real_logs_carry_every_wording() -> None:
    """The property below meets each wording's bit (else it could not fail on one)."""
    with tempfile.TemporaryDirectory() as tmp:
        for k, data in enumerate(_LOGS):
            (Path(tmp) / f"worker_{k}.log").write_bytes(data)
        reader = RunReader(Path(tmp))
        _tick(reader, {})
        got = reader.table.worded()
        assert got.tolist() == _whole(reader.table, _workers(reader)).tolist()
        assert all((got & bit).any() for bit, _ in _WORDINGS)


_GROW = st.lists(st.integers(0, 9000), min_size=len(_LOGS), max_size=len(_LOGS))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(
    ticks=[
        ([0, 0, 0, 0, 0, 0], False, 0),
        ([0, 0, 0, 0, 215, 0], False, 0),
        ([117, 0, 0, 0, 0, 0], False, 0),
        ([116, 0, 0, 0, 0, 0], False, 0),
        ([0, 0, 0, 0, 214, 0], False, 4),
    ]
)
@given(
    ticks=st.lists(
        st.tuples(_GROW, st.booleans(), st.integers(-1, len(_LOGS) - 1)),  # bytes per file, ask, a restart
        min_size=1,
        max_size=7,
    )
)
@example(ticks=[([4000] * 6, True, -1), ([40000] * 6, False, 2), ([3000] * 6, True, -1), ([40000] * 6, True, 0)])
def test_live_ticks_of_real_logs_flag_the_whole_tables_rows(ticks: list[tuple[list[int], bool, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        written = [0] * len(_LOGS)
        for k in range(len(_LOGS)):
            (root / f"worker_{k}.log").write_bytes(b"")
        reader = RunReader(root)
        seen: dict[str, tuple[Rows, tuple[int, int, int], int]] = {}
        for grow, ask, restart in ticks:
            if restart >= 0:  # a relaunch writes a new file: the old one's rows are dropped, the rest renumbered
                path = root / f"worker_{restart}.log"
                path.unlink()
                path.write_bytes(b"")
                written[restart] = 0
            for k, (data, more) in enumerate(zip(_LOGS, grow, strict=True)):
                with (root / f"worker_{k}.log").open("ab") as f:
                    f.write(data[written[k] : written[k] + more])
                written[k] = min(len(data), written[k] + more)
            _tick(reader, seen)
            if ask:
                assert reader.table.worded().tolist() == _whole(reader.table, _workers(reader)).tolist()
        assert reader.table.worded().tolist() == _whole(reader.table, _workers(reader)).tolist()


def _file(rank: int) -> FileState:
    return FileState(LogFile(Path(f"worker_{rank}.log"), f"worker_{rank}.log", "worker", rank, "msrun"))


_STEP = st.tuples(
    st.integers(0, 2),  # the file
    st.lists(st.integers(-2, 40), max_size=4),  # its new rows' offsets (repeated, falling now and then)
    st.lists(st.tuples(st.sampled_from(["averaged", "parts", "trained"]), st.integers(-2, 40)), max_size=3),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ticks=st.lists(st.tuples(st.lists(_STEP, max_size=4), st.booleans()), max_size=10),
    drop_at=st.integers(-1, 10),
    grow_at=st.integers(-1, 10),
)
@example(  # an offset noted of a row the table took a tick before: that file flagged afresh
    ticks=[([(0, [5, 9], [])], True), ([(0, [12], [("averaged", 5)])], True)], drop_at=-1, grow_at=-1
)
@example(  # an offset noted before its row is taken (a background read between the take and the ask)
    ticks=[([(0, [5], [("parts", 9)])], True), ([(0, [9, 9], [])], True), ([(0, [9], [])], True)],
    drop_at=-1,
    grow_at=-1,
)
def test_any_noted_offsets_flag_the_whole_tables_rows(
    ticks: list[tuple[list[tuple[int, list[int], list[tuple[str, int]]]], bool]], drop_at: int, grow_at: int
) -> None:
    """Whatever the order of rows and offsets (the exactness `WordedRows` checks rather than assumes)."""
    table = MetricTable()
    live = [_file(r) for r in range(3)]
    for k, (steps, ask) in enumerate(ticks):
        if k == drop_at and len(live) > 1:
            live = live[1:]
        if k == grow_at:
            block = np.full((3000, len(ROW_KEYS)), np.nan)
            block[:, ROW_KEYS.index("offset")] = 100 + np.arange(3000)
            live[-1].rows.add_block(block)
            live[-1].rows.averaged.extend(range(100, 3100, 7))
        for which, offsets, noted in steps:
            rows = live[which % len(live)].rows
            for off in offsets:
                rows.append(tuple({"loss": 1.0, "offset": float(off)}.get(key, float("nan")) for key in ROW_KEYS))
            for name, off in noted:
                getattr(rows, name).append(off)
        table.update(live)
        if ask:
            whole = _whole(table, {s.info.rel: s.rows for s in live})
            assert table.worded().tolist() == whole.tolist()
