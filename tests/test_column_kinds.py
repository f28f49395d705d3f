"""A column table's row (core.logs.rows.columns `read_row`): each cell goes where its column's name says, whatever
other headers were read before (each header's column kinds are decided once and kept, round 17: a tick of the
real-corpus folder decided them again for every cell of ~470 rows). Headers as Keras' CSVLogger and Ultralytics'
results.csv write them (tests/fixtures/real_logs: keras-csvlogger-training-log-csv-header-loss-fourth-column-24-
epochs_brats2020-training-log, `epoch,accuracy,dice_coef,loss,lr,...`; ultralytics-yolo12-results-csv-100-epochs-
box-cls-dfl-loss-columns-no-total_handraising-yolo12n-results-csv, `epoch,time,train/box_loss,...,lr/pg0`)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from core.logs.rows.columns import header_of, read_row

_OTHER = ["accuracy", "dice_coef", "train/box_loss", "val_loss", "lr", "time", "rank", "file", "epoch", "iter"]
_HEADER = st.tuples(st.lists(st.sampled_from(_OTHER), min_size=2, max_size=6, unique=True), st.integers(0, 6))
_VALUE = st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 4))


def _expected(names: list[str], values: list[float]) -> tuple[dict[str, float], dict[str, float]]:
    """(fields, extras) a row must give: the column named `loss` itself is the loss (round 12: the loss beside its
    parts, Lightning's `train/loss_simple_step,...,train/loss_step`), else the first loss-named column; the others'
    own names say."""
    fields: dict[str, float] = {}
    extras: dict[str, float] = {}
    loss = names.index("loss") if "loss" in names else next(i for i, n in enumerate(names) if "loss" in n)
    for i, (name, value) in enumerate(zip(names, values, strict=True)):
        if i == loss:
            fields["loss"] = value
        elif name in ("epoch", "iter"):
            fields["epoch" if name == "epoch" else "step"] = value
        elif name == "lr":
            fields["lr"] = value
        elif name == "time":
            extras["time_value"] = value
        elif name not in ("rank", "file"):
            extras[name] = value
    return fields, extras


@settings(max_examples=200, deadline=None)
@given(tables=st.lists(st.tuples(_HEADER, st.data()), min_size=1, max_size=4))
def test_each_cell_goes_where_its_columns_name_says(tables: list) -> None:
    heads = []
    for (names, at), _ in tables:
        names = [*names[:at], "loss", *names[at:]] if "loss" not in names else names
        header = header_of(",".join(names).encode())
        assert header is not None
        heads.append((names, header))
    for (names, header), (_, data) in zip(heads * 2, [*tables, *tables], strict=True):  # each header read twice
        values = data.draw(st.lists(_VALUE, min_size=len(names), max_size=len(names)))
        read = read_row(header, ",".join(repr(v) for v in values).encode())
        assert read is not None
        fields, extras = _expected(names, values)
        assert {k: v for k, v in read.fields.items() if not math.isnan(v)} == fields
        assert read.extras == extras
