"""The Monitor's parts; `pages/monitor.py` only wires them.

- `source`: what to watch (a launched run, a log folder, a replay) as a `Source`, and the long-lived
  objects behind it: the shared `RunWatcher`s (`get_watcher`) and the replays in progress.
- `sidebar`: the chart options, the stall threshold and how logs are read (`MonitorOptions`).
- `live`: one tick of the live panel (`live_panel` over a `LiveView`), run as a self-refreshing fragment.
- `panel`: the live panel's parts: reading progress, headline, rank and run pickers, the loss chart,
  the rank table beside step time, the raw log tail, the CSV button.
- `figure_data`: what the figures show, computed (band, rank lines, outliers, evaluation points,
  aggregates, heatmap cells, rank-state counts); no Streamlit, no Plotly.
- `figures`: the loss and step-time figures drawn from it, the rank states and their table, the CSV.
- `scale`: big runs (above `SCALE_RANKS`): rank x step grids, the ranks to look at, the aggregate chart
  and heatmaps; `scale_view` lays them out.
- `diagnosis`: the findings line and the grouped failures.
- `alerts`, `memory`, `step_time`, `share`: the alert attempts and browser notifications, planned vs
  measured device memory and step time, the report / TensorBoard downloads.
- `chart`: the live Plotly component that keeps the user's zoom (its html and bundle in `chart_assets/`).
- `state`: every session key of the Monitor, and the per-session memo (`cached`).
"""
