"""Evaluations through the real worker: a real `celery worker`, the process provider, the tiny model, guess-number.

Nothing is faked; the GPU is the one boundary we cannot reach, so these run on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.webapp.runs.conftest import register_builtin
from tests.workers.conftest import wait_for
from tests.workers.test_training_runs import SMALL
from webapp.catalog.services import environment_create
from webapp.evals.models import EvalEpisode, EvalStatus, Evaluation
from webapp.evals.selectors import baseline_to_final
from webapp.evals.services import evaluation_cancel, evaluation_create
from webapp.evals.statistics import pass_at_k
from webapp.runs.models import MetricPoint, Status
from webapp.runs.panels import panel_layout
from webapp.runs.selectors import metric_names
from webapp.runs.services import run_create

RUBRIC = Path(__file__).resolve().parents[1] / "fixtures" / "envs" / "rubric_guess"
# lane B but the rubric's story (tests/lanes.sh: the lanes' balance)
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def wait_evaluated(evaluation: Evaluation, timeout: float = 600) -> Evaluation:
    def done():
        evaluation.refresh_from_db()
        return evaluation.status in (EvalStatus.SUCCEEDED, EvalStatus.FAILED, EvalStatus.CANCELLED)

    wait_for(done, timeout=timeout, what=f"evaluation {evaluation.pk} to finish ({evaluation.status})")
    return evaluation


def outcomes(evaluation: Evaluation) -> list[tuple]:
    return list(EvalEpisode.objects.filter(evaluation=evaluation).order_by("seed", "sample").values_list(
        "seed", "sample", "reward", "success", "num_tool_calls", "num_turns"))  # fmt: skip


@pytest.mark.lane_b
def test_a_greedy_eval_is_reproducible_and_its_aggregates_are_its_episodes(acme, alice, tiny_model, live_worker):
    version = register_builtin(acme, "guess-number")
    first = evaluation_create(team=acme, user=alice, model_name="tiny-local", versions=[version], seeds="500-511",
                              k=2, greedy=True, max_turns=4, max_tokens=256)  # fmt: skip
    first = wait_evaluated(first)
    assert first.status == EvalStatus.SUCCEEDED, first.failure_reason
    second = wait_evaluated(evaluation_create(team=acme, user=alice, model_name="tiny-local", versions=[version],
                                              seeds="500-511", k=2, greedy=True, max_turns=4,
                                              max_tokens=256))  # fmt: skip
    assert second.status == EvalStatus.SUCCEEDED, second.failure_reason
    assert [row[0] for row in outcomes(first)] == [s for s in range(500, 512) for _ in (0, 1)], "two samples a seed"
    turns = {}
    for episode in first.episodes.all():  # what was played; how long a call took is no part of it
        turns.setdefault(episode.seed, []).append([{k: v for k, v in t.items() if k not in {"seconds", "at"}}
                                                   for t in episode.turns])  # fmt: skip
    assert all(a == b for a, b in turns.values()), "greedy: both samples of a seed are the same argmax episode"
    assert outcomes(first) == outcomes(second), "greedy decoding on fixed seeds gives the same episodes"
    assert first.settings_key == second.settings_key
    assert all(e.turns and e.turns[0]["role"] == "assistant" for e in first.episodes.all()), "kept in full"
    assert first.episodes_done == first.episodes_total == 24
    result = first.results["guess-number"]
    rewards = [row[2] for row in outcomes(first)]
    assert result["mean_reward"]["value"] == pytest.approx(sum(rewards) / len(rewards))
    assert result["mean_reward"]["low"] <= result["mean_reward"]["value"] <= result["mean_reward"]["high"]


@pytest.mark.lane_b
def test_pass_at_k_and_avg_at_k_equal_a_direct_computation(acme, alice, tiny_model, live_worker):
    version = register_builtin(acme, "guess-number")
    evaluation = wait_evaluated(evaluation_create(
        team=acme, user=alice, model_name="tiny-local", versions=[version], seeds="700-705", k=4, greedy=False,
        temperature=1.0, max_turns=4, max_tokens=256))  # fmt: skip
    assert evaluation.status == EvalStatus.SUCCEEDED, evaluation.failure_reason
    by_seed: dict[int, list[float]] = {}
    for seed, _, reward, *_ in outcomes(evaluation):
        by_seed.setdefault(seed, []).append(reward)
    assert sorted(by_seed) == list(range(700, 706)) and all(len(r) == 4 for r in by_seed.values())
    threshold = version.success_threshold
    avg = sum(sum(r) / 4 for r in by_seed.values()) / 6
    pass4 = sum(pass_at_k(4, sum(x > threshold for x in r), 4) for r in by_seed.values()) / 6
    pass1 = sum(pass_at_k(4, sum(x > threshold for x in r), 1) for r in by_seed.values()) / 6
    result = evaluation.results["guess-number"]
    assert result["avg@k"] == pytest.approx(avg)
    assert result["pass@4"]["value"] == pytest.approx(pass4)
    assert result["pass@1"]["value"] == pytest.approx(pass1)
    assert EvalEpisode.objects.filter(evaluation=evaluation, num_tool_calls__gt=0).exists(), "it stepped the env"
    assert result["success_rate"]["value"] == pytest.approx(pass1), "pass@1 is the success rate of the samples"


def won(turns: list[dict]) -> bool | None:
    """What the rubric_guess server said of a game in its last answer (None: the episode never ended a game)."""
    answers = [t for t in turns if t["role"] == "tool" and t.get("done")]
    return json.loads(answers[-1]["content"])["metadata"]["won"] if answers else None


def test_a_run_on_an_environment_that_owns_its_reward_learns_and_is_evaluated_by_its_rubric(
    acme, alice, tiny_model, live_worker
):
    # rubric_guess: an OpenEnv TrajectoryRubric pays 1.0 for a won game and 0.0 for a lost one, only at the end; its
    # openenv.yaml declares that the environment owns the reward. Evals at the start, every 2 steps and the end.
    env = environment_create(team=acme, user=None, name="rubric-guess", source_kind="folder", source_ref=str(RUBRIC))
    version = env.versions.get()
    assert version.reward_rule.as_dict() == {"kind": "environment", "field": "reward", "source": "declared"}
    run = run_create(team=acme, user=alice, env_version=version, config={
        **SMALL, "max_steps": 5, "eval_steps": 2, "eval_seeds": "900-907"},
        trust_override_reason="fixture: trust verdicts are tested elsewhere")  # fmt: skip
    wait_for(lambda: run.refresh_from_db() or run.status in ("succeeded", "failed", "cancelled"), timeout=900,
             what="the run to finish")  # fmt: skip
    assert run.status == Status.SUCCEEDED, run.failure_reason
    assert run.env_tool_calls > 0

    # The environment's column (TRL names it after the environment class) is recorded every step; Trainyard's own
    # column gave these rollouts nothing (no reward counted twice), and the step's reward is the environment's.
    column = dict(MetricPoint.objects.filter(run=run, name="rewards/RubricGuessEnv/mean").values_list("step", "value"))
    reward = dict(MetricPoint.objects.filter(run=run, name="reward").values_list("step", "value"))
    assert sorted(column) == [1, 2, 3, 4, 5] and column == pytest.approx(reward)
    assert not MetricPoint.objects.filter(run=run, name="rewards/environment_reward/mean").exists()
    episodes = list(run.episodes.all())
    for step in column:
        mine = [e.reward for e in episodes if e.step == step]
        assert column[step] == pytest.approx(sum(mine) / len(mine))
    # Every recorded game was paid what its rubric said: 1.0 won, 0.0 lost, nothing before the end.
    judged = [(e.reward, won(e.turns)) for e in episodes if e.has_transcript and won(e.turns) is not None]
    assert judged and all(r == (1.0 if w else 0.0) for r, w in judged), judged
    assert any(w for _, w in judged), "a won game pays (a guess within 5 of 1..16 wins more often than not)"
    for e in episodes:
        answers = [t for t in e.turns if t["role"] == "tool" and t.get("reward") is not None]
        assert all(t["reward"] == 0.0 for t in answers if not t.get("done"))
        assert all("credit" in t for t in answers if won(e.turns) and not t.get("error"))  # the rubric's attribution
    layout = {p["key"] for section in panel_layout(metric_names(run=run)) for p in section["panels"]}
    assert "rewards/RubricGuessEnv/mean" in layout, "charted apart"

    steps = sorted(MetricPoint.objects.filter(run=run, name="eval/mean_reward").values_list("step", flat=True))
    assert steps == [0, 2, 4, 5], "step 0 (the baseline), every 2 steps, and the end"
    assert MetricPoint.objects.filter(run=run, name="eval/success_rate", step=5).exists()
    assert MetricPoint.objects.filter(run=run, name="eval/loss").exists(), "TRL's own eval logs chart as eval/*"
    evals = list(Evaluation.objects.filter(run=run).order_by("step"))
    assert [e.step for e in evals] == [0, 2, 4, 5] and all(e.status == EvalStatus.SUCCEEDED for e in evals)
    assert {s for e in evals for s in e.episodes.values_list("seed", flat=True)} == set(range(900, 908))
    assert not run.episodes.filter(reset_kwargs__seed__in=list(range(900, 908))).exists(), "training never saw them"
    summary = baseline_to_final(run=run)
    assert summary["baseline"].step == 0 and summary["final"].step == 5
    assert summary["difference"]["low"] <= summary["difference"]["value"] <= summary["difference"]["high"]

    # An evaluation of the run's model, apart from training, is paid by the same rubric.
    later = wait_evaluated(evaluation_create(team=acme, user=alice, model_name=f"run:{run.pk}/final",
                                             versions=[version], seeds="900-907", k=1, greedy=True, max_turns=4,
                                             max_tokens=256))  # fmt: skip
    assert later.status == EvalStatus.SUCCEEDED, later.failure_reason
    played = [(e.reward, won(e.turns)) for e in later.episodes.all()]
    assert all(r == (1.0 if w else 0.0) for r, w in played), played
    assert later.results["rubric-guess"]["mean_reward"]["value"] == pytest.approx(
        sum(r for r, _ in played) / len(played)
    )


@pytest.mark.lane_b
def test_cancel_stops_an_evaluation_and_its_servers(acme, alice, tiny_model, live_worker):
    version = register_builtin(acme, "guess-number")
    evaluation = evaluation_create(team=acme, user=alice, model_name="tiny-local", versions=[version],
                                   episodes=2000, max_turns=4, max_tokens=256)  # fmt: skip
    wait_for(lambda: EvalEpisode.objects.filter(evaluation=evaluation).exists(), timeout=300, what="a first episode")
    evaluation_cancel(user=alice, evaluation=evaluation)
    evaluation = wait_evaluated(evaluation, timeout=60)
    assert evaluation.status == EvalStatus.CANCELLED
    assert 0 < evaluation.episodes_done < evaluation.episodes_total, "what was recorded stays"
    from tests.workers.conftest import process_alive

    handles = [pid for record in evaluation.deployment.values() for pid in record.get("handles", [])]
    assert handles and not any(process_alive(pid) for pid in handles if isinstance(pid, int))
