"""The charts' layout (sections, one metric per panel, readable titles), a user's arrangement of them, and a run's
reward distribution: what the run page and the compare page draw."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from tests.webapp.runs.conftest import recorded_run
from webapp.runs.distribution import reward_distribution
from webapp.runs.panels import metric_label, panel_layout


def test_metrics_fall_into_the_sections_a_grpo_user_reads_in_order():
    names = ["num_tokens", "learning_rate", "completions/min_length", "eval/clip_ratio/low_mean", "eval/mean_reward",
             "eval/mean_reward_low", "eval/mean_reward_high", "kl", "reward", "reward_std", "tools/call_frequency",
             "frac_reward_zero_std", "eval/samples_per_second", "my_custom_thing"]  # fmt: skip
    layout = panel_layout(names)
    order = ["reward", "eval", "tools", "policy", "completions", "system", "other", "trl_eval"]
    assert [s["key"] for s in layout] == order, "TRL's own eval-loop logs last (and folded at first)"
    assert [p["key"] for p in layout[-1]["panels"]] == ["eval/clip_ratio/low_mean", "eval/samples_per_second"]
    panels = {s["key"]: [p["key"] for p in s["panels"]] for s in layout}
    assert panels["reward"] == ["reward", "frac_reward_zero_std"], "the std is the reward's band, not a panel"
    assert panels["eval"][0] == "eval/mean_reward" and "eval/mean_reward_low" not in panels["eval"]
    assert panels["policy"] == ["kl", "learning_rate"]
    assert all(len(p["names"]) == 1 for s in layout for p in s["panels"]), "one metric per chart"
    heldout = layout[1]["panels"][0]
    assert heldout["heldout"] and heldout["band"]["names"] == ["eval/mean_reward_low", "eval/mean_reward_high"]


def test_titles_read_as_words_and_ratios_are_percentages():
    assert metric_label("completions/mean_length") == "Completions: mean length"
    assert metric_label("kl") == "KL divergence to the reference"
    layout = {p["key"]: p for s in panel_layout(["learning_rate", "clip_ratio/high_mean", "eval/success_rate"])
              for p in s["panels"]}  # fmt: skip
    assert layout["clip_ratio/high_mean"]["unit"] == "ratio" and layout["eval/success_rate"]["unit"] == "ratio"
    assert layout["learning_rate"]["unit"] == "", "a learning rate is not a ratio"
    calls = panel_layout(["tools/call_frequency", "tools/failure_frequency"])[0]["panels"]
    assert [p["unit"] for p in calls] == ["", "ratio"], "calls per completion can exceed 1; failures are a share"


def test_the_panels_endpoint_lays_out_what_it_is_given(client_for, alice):
    response = client_for(alice).get(reverse("runs:chart-panels"), {"names": "loss,reward"})
    assert [s["key"] for s in response.json()["sections"]] == ["reward", "policy"]


def test_a_layout_is_each_users_own_and_bad_ones_are_refused(client_for, alice, bob):
    url = reverse("runs:chart-layout")
    client = client_for(alice)
    saved = client.post(url, json.dumps({"pinned": ["kl"], "hidden": ["num_tokens"], "order": ["loss", "kl"]}),
                        content_type="application/json")  # fmt: skip
    assert saved.status_code == 200 and saved.json()["pinned"] == ["kl"]
    assert client.get(url).json() == {"pinned": ["kl"], "hidden": ["num_tokens"], "order": ["loss", "kl"],
                                      "collapsed": ["trl_eval"]}  # fmt: skip
    assert client_for(bob).get(url).json() == {"pinned": [], "hidden": [], "order": [], "collapsed": ["trl_eval"]}
    for bad in ({"pinned": "kl"}, {"hidden": [1]}, {"order": ["x" * 101]}, {"pinned": ["n"] * 2001}, ["kl"]):
        refused = client_for(alice).post(url, json.dumps(bad), content_type="application/json")
        assert refused.status_code == 400 and refused.json()["error"]
    assert client_for(alice).get(url).json()["pinned"] == ["kl"], "a refused change loses nothing"


@pytest.mark.django_db
def test_the_reward_distribution_counts_each_steps_episodes_and_zero_spread_groups(acme, alice, client_for, charlie):
    run = recorded_run(acme, alice, steps=6)
    d = reward_distribution(run)
    assert len(d["columns"]) == 6 and d["edges"][0] == 0.0 and d["edges"][-1] == 1.0
    first = d["columns"][0]
    assert sum(first["counts"]) == first["episodes"] == 8
    assert first["counts"][0] == 5 and first["counts"][-1] == 2, "five 0.0 rewards, two 1.0"
    assert first["zero_spread_share"] == 0.5, "one group of two had the same reward everywhere"
    assert client_for(alice).get(reverse("runs:run-reward-distribution", args=[run.pk])).json()["columns"]
    assert client_for(charlie).get(reverse("runs:run-reward-distribution", args=[run.pk])).status_code == 404
