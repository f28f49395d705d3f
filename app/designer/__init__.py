"""The Layout Designer's parts: one module per tab (`matrix`, `tensors`, `operators`, `files`), the
pieces they share (`chips`, `placement`, `operator_editor`, `analysis`, `overview`).

The shared design and its session keys live in `app.design_state`; every edit is a
`core.sharding.edits` function run through `design_state.apply`. `pages/designer.py` only wires
these parts together.
"""
