"""The Planner's Pareto chart is computed before it is drawn (issue 32): `pareto_data` says what the chart
shows, from the plan alone; `pareto_figure` only draws it."""

from __future__ import annotations

import pytest

from app.planner_data import ChartPoint, chart_point, pareto_data
from app.planner_view import pareto_figure
from core.plan.explore import Plan, explore
from core.plan.recipes import PlanModel

MODEL_7B = PlanModel(hidden=4096, heads=32, ffn=11008, layers=32, vocab=32000, seq=4096)


@pytest.fixture(scope="module")
def plan_7b() -> Plan:
    return explore(MODEL_7B, global_batch=32, devices=8, card_memory_gb=32)


def test_the_chart_s_parts_come_from_the_plan(plan_7b: Plan) -> None:
    data = pareto_data(plan_7b)
    assert len(data.recipes) == len(plan_7b.valid)
    assert len(data.fitting) == sum(e.fits for e in plan_7b.valid) > 0
    assert len(data.too_big) == sum(not e.fits for e in plan_7b.valid) > 0
    assert list(data.front["recipe"]) == [e.recipe.label() for e in plan_7b.time_pareto]
    assert data.limit_gib == 32.0
    assert data.step_span == (min(e.step_s for e in plan_7b.valid), max(e.step_s for e in plan_7b.valid))
    assert 0.01 <= data.mfu_top == max(0.01, max(e.time.mfu for e in plan_7b.valid if e.time))
    assert data.hardware == plan_7b.timing.hardware.name and data.selected is None and data.marked is None


def test_a_marked_recipe_is_a_point_and_an_invalid_one_is_none(plan_7b: Plan) -> None:
    best = plan_7b.valid[0]
    assert chart_point(best) == ChartPoint(best.memory_bytes / (1 << 30), best.step_s, best.recipe.label())
    assert chart_point(None) is None
    assert plan_7b.invalid and chart_point(plan_7b.invalid[0]) is None
    data = pareto_data(plan_7b, selected=best, marked=plan_7b.invalid[0])
    assert data.selected == chart_point(best) and data.marked is None


def test_the_figure_draws_exactly_the_computed_parts(plan_7b: Plan) -> None:
    best = plan_7b.valid[0]
    fig = pareto_figure(plan_7b, selected=best, marked=best)
    names = [trace.name for trace in fig.data]
    assert names == ["fits", "does not fit", "Pareto front", "card memory 32 GiB", "the YAML's recipe", "selected"]
    assert list(fig.data[0].x) == list(pareto_data(plan_7b).fitting["memory_gib"])


def test_a_plan_with_no_valid_recipe_draws_no_limit_line() -> None:
    empty = explore(MODEL_7B, global_batch=3, devices=7, card_memory_gb=32)  # 7 cards, batch 3: nothing divides
    assert empty.valid == [] and empty.invalid
    data = pareto_data(empty)
    assert data.recipes.empty and data.step_span is None and data.mfu_top == 0.01
    assert [t.name for t in pareto_figure(empty).data] == []
