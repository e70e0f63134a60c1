"""The demo run is a healthy run: replayed step by step through every built-in alert rule, it raises none. The
series were recorded from a real `make demo` run (tests/fixtures/demo_run_series.json); a rule made more eager, or a
demo made less healthy, fails here before a user sees a false alarm."""

from __future__ import annotations

import json
from pathlib import Path

from webapp.alerts.conditions import BUILTIN_RULES

RECORDED = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "demo_run_series.json").read_text())


def test_the_demo_run_raises_no_alert_at_any_step():
    series = {name: [(int(s), float(v)) for s, v in points] for name, points in RECORDED["series"].items()}
    assert len(series["reward"]) == 60 and series["tools/failure_frequency"], "the whole run was recorded"
    for rule in BUILTIN_RULES:
        points = series.get(rule.metric, [])
        raised = [(n, rule.check(points[:n])) for n in range(1, len(points) + 1)]
        assert [(n, found) for n, found in raised if found] == [], rule.key


def test_the_same_rules_raise_on_the_demo_configuration_that_broke():
    # lr 1e-4 with beta 0.02 on the same machine: tool calls failed on most calls for several steps mid-run.
    failing = [0.05, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.31, 0.0, 0.19, 0.0, 0.2, 0.67, 0.21, 0.42, 0.5, 0.78,
               0.62, 0.8]  # fmt: skip
    spike = next(rule for rule in BUILTIN_RULES if rule.key == "tool_error_spike")
    found = spike.check([(step, value) for step, value in enumerate(failing, start=1)])
    assert found is not None and found.step == 21
