"""Strategy planner: memory per card, communication per step and pipeline bubble for every parallel recipe.

activations (Korthikanti et al. 2022), states (placement of every weight + ZeRO's 16 B/param),
comm (ring collectives, TP/DP/PP), recipes (enumeration + reasons), explore (evaluate, Pareto,
proposal), mindformers (YAML export). Pure: no streamlit; app/planner_view.py draws the results.
"""
