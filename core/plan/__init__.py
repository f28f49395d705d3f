"""Strategy planner: memory per card, communication per step, pipeline bubble and step time for every parallel
recipe.

activations (Korthikanti et al. 2022), states (placement of every weight + ZeRO's 16 B/param),
comm (ring collectives, TP/DP/PP), context (context parallel: ring / Ulysses memory and communication),
hardware (card presets and JSON cards), steptime (FLOPs over peak × efficiency, each collective over its link,
bubble, overlap), recipes (enumeration + reasons), explore (evaluate, Pareto, proposal), mindformers (YAML
export). Pure: no streamlit; app/planner_data.py computes what the Planner page shows, app/planner_view.py and
app/planner_time.py draw it.
"""
