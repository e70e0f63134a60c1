from __future__ import annotations

from envs.adapter import EpisodeLog, ToolEvent
from workers.training.recording import episode_turns, group_advantages, numeric_metrics


def test_advantages_are_centred_per_group():
    advantages = group_advantages([1.0, 0.0, 0.5, 0.5], group_size=2)
    assert advantages[0] > 0 > advantages[1]
    assert advantages[2] == advantages[3] == 0.0  # a zero-variance group teaches nothing


def test_only_finite_numbers_are_metrics():
    assert numeric_metrics({"loss": 0.1, "reward": 1, "nan": float("nan"), "flag": True, "name": "x"}) == {
        "loss": 0.1,
        "reward": 1.0,
    }


def test_tool_results_are_matched_with_the_environments_events():
    log = EpisodeLog(episode_id="e1", reset_kwargs={"seed": 1})
    log.events.append(ToolEvent("guess", {"number": 8}, "lower", {"hint": "lower"}, 0.0, False, None, 0.01))

    def call(name, arguments):
        return {"type": "function", "function": {"name": name, "arguments": arguments}}

    completion = [
        {"role": "assistant", "content": "", "tool_calls": [call("guess", {"number": 8})]},
        {"role": "tool", "name": "guess", "content": "lower"},
        {"role": "assistant", "content": "", "tool_calls": [call("jump", {})]},
        {"role": "tool", "name": "jump", "content": "{'error': 'Tool jump not found.'}"},
    ]
    turns = episode_turns(completion, log)
    assert turns[0]["tool_calls"] == [{"name": "guess", "arguments": {"number": 8}}]
    assert turns[1]["reward"] == 0.0 and turns[1]["error"] is None
    assert turns[3]["error"] == "{'error': 'Tool jump not found.'}"
    assert not any(t.get("not_run") for t in turns), "every call was answered"


def test_a_call_the_budget_left_unrun_says_so():
    # OpenEnv's maze at 384 completion tokens: its first answer took most of them, and TRL ran no second call.
    log = EpisodeLog(episode_id="e1", reset_kwargs={"seed": 1})
    log.events.append(ToolEvent("maze", {"action": 3}, "{...}", {}, -0.05, False, None, 0.01))
    maze = {"type": "function", "function": {"name": "maze", "arguments": {"action": 3}}}
    completion = [
        {"role": "assistant", "content": "", "tool_calls": [maze]},
        {"role": "tool", "name": "maze", "content": "{...}"},
        {"role": "assistant", "content": "", "tool_calls": [maze]},
    ]
    turns = episode_turns(completion, log)
    assert "not_run" not in turns[0] and "max_completion_length" in turns[2]["not_run"]


def test_the_sample_policy_keeps_best_worst_errored_and_a_sample():
    from workers.training.recording import transcripts_to_keep

    rewards = [0.1, 0.9, 0.5, 0.0, 0.5, 0.5, 0.5, 0.5]
    errored = [False] * 7 + [True]
    keep = transcripts_to_keep(rewards, errored, sample=2, seed=3)
    assert {1, 3, 7} <= keep
    assert len(keep) <= 5


def test_a_step_whose_calls_the_budget_cut_records_how_many(acme, alice):
    # Two maze episodes of one group: the first ran its one call; the second's second call was cut by the budget.
    from types import SimpleNamespace

    from tests.webapp.runs.conftest import register_builtin
    from webapp.runs.models import Episode
    from webapp.runs.services import run_create
    from workers.training.recording import EpisodeRecorder

    run = run_create(team=acme, user=alice, env_version=register_builtin(acme, "guess-number"), start=False)
    maze = {"type": "function", "function": {"name": "maze", "arguments": {"action": 3}}}

    def played(calls: int):
        log = EpisodeLog(episode_id=f"e{calls}", reset_kwargs={"seed": calls})
        log.events.append(ToolEvent("maze", {"action": 3}, "{...}", {}, -0.05, False, None, 0.01))
        turns = [{"role": "assistant", "content": "", "tool_calls": [maze]}, {"role": "tool", "name": "maze",
                                                                             "content": "{...}"}]  # fmt: skip
        return turns + [{"role": "assistant", "content": "", "tool_calls": [maze]}] * (calls - 1), log

    (one, log_one), (cut, log_cut) = played(1), played(2)
    recorder = EpisodeRecorder(run, group_size=2)
    recorder.record(step=1, prompts=["p", "p"], completions=[one, cut], rewards=[-0.05, -0.05],
                    environments=[SimpleNamespace(episode=log_one), SimpleNamespace(episode=log_cut)])  # fmt: skip
    assert recorder.last_counts["env/calls_not_run"] == 1 and recorder.last_counts["env/tool_calls"] == 2
    cut_turns = Episode.objects.get(run=run, index_in_group=1).turns
    assert cut_turns[-1]["not_run"].startswith("not run")
