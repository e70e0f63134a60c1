"""A plain TRL GRPO script, as a team writes one: TRL's own GRPOTrainer with an `environment_factory` on our
guess-number environment (its game logic in-process) and the tiny model, started as a separate process with no
Trainyard worker and no database access. Two added lines (`import trainyard`, `trainyard.watch(...)`) stream its
run: curves, episodes with their tool calls, the end."""

from __future__ import annotations

import pytest

from webapp.runs.models import Episode, MetricPoint, Run
from webapp.tokens.services import token_create

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TRL_SCRIPT = '''
import json
import os
import sys
import time

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from envs.guess_number.models import GuessAction
from envs.guess_number.server.environment import GuessNumberEnvironment

import trainyard  # added line 1


def shown(observation) -> str:
    """What the model reads of an observation: its fields as JSON (TRL makes every public method a tool: not here)."""
    return json.dumps(observation.model_dump(exclude={"reward", "done", "metadata"}))


class GuessNumber:
    """The game, as TRL's environment_factory wants it: reset() and one method per tool."""

    def __init__(self):
        self.env = GuessNumberEnvironment()
        self.reward = 0.0

    def reset(self, **kwargs) -> str:
        self.reward = 0.0
        return "\\n\\n" + shown(self.env.reset(seed=kwargs.get("seed")))

    def guess(self, number: int) -> str:
        """Guess the hidden number. The reply says whether the hidden number is higher or lower.

        Args:
            number: Your guess: a whole number within the announced range.
        """
        observation = self.env.step(GuessAction(number=number))
        self.reward += observation.reward or 0.0
        return shown(observation)


def environment_reward(environments, **kwargs):
    time.sleep(float(os.environ.get("STEP_PAUSE", "0")))  # a browser test watches the steps arrive one by one
    return [env.reward for env in environments]


# The tiny model knows one way of being asked (what it was trained on): the game's description, then the game's own
# observation as JSON. Asked otherwise it mixes up the games it learned (a "move" with a "direction").
prompt = ("Find a hidden whole number from higher/lower hints; fewer guesses earn more. Act only by calling the tools "
          "(guess); each result tells you what happened.")
dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": prompt}]] * 8, "seed": list(range(8))})
trainer = GRPOTrainer(
    model=sys.argv[1], reward_funcs=environment_reward, train_dataset=dataset, environment_factory=GuessNumber,
    args=GRPOConfig(output_dir="out", max_steps=int(os.environ.get("STEPS", "3")), per_device_train_batch_size=4,
                    num_generations=4,
                    max_completion_length=128, max_tool_calling_iterations=3, learning_rate=5e-5, logging_steps=1,
                    report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True, temperature=0.7),
)
trainyard.watch(trainer, environment="guess-number", name=os.environ.get("RUN_NAME", "plain trl script"))  # line 2
trainer.train()
'''


def test_a_plain_trl_script_streams_its_run_with_two_added_lines(script, tiny_model, acme, alice, guess_version,
                                                                 tmp_path):  # fmt: skip
    token = token_create(user=alice, team=acme, name="script", scope="write")[1]
    proc = script(
        TRL_SCRIPT, token, args=(str(tiny_model),), DATABASE_URL="postgres://nobody@127.0.0.1:1/none"
    )  # fmt: skip  (it needs no database)
    assert proc.wait(timeout=600) == 0, (tmp_path / "script.log").read_text()[-4000:]
    run = Run.objects.get(kind="external")
    assert run.status == "succeeded" and run.name == "plain trl script", run.failure_reason
    assert run.config["learning_rate"] == 5e-5 and run.max_steps == 3
    assert sorted(set(MetricPoint.objects.filter(run=run, name="reward").values_list("step", flat=True))) == [1, 2, 3]
    episodes = Episode.objects.filter(run=run)
    assert episodes.count() == 12 and sorted({e.step for e in episodes}) == [1, 2, 3]
    assert {(e.group, e.index_in_group) for e in episodes.filter(step=1)} == {(0, 0), (0, 1), (0, 2), (0, 3)}
    tool_turns = [t for e in episodes for t in e.turns if t["role"] == "tool"]
    assert tool_turns and all(t["name"] == "guess" for t in tool_turns), "the tiny model calls the guess tool"
    assert all(isinstance(t.get("seconds"), float) for t in tool_turns)  # each call as the environment saw it
    assert run.env_tool_calls + run.env_tool_errors == len(tool_turns)
    rewards = dict(MetricPoint.objects.filter(run=run, name="reward").values_list("step", "value"))
    for step, mean in rewards.items():  # the episodes' rewards are the ones TRL trained on
        mine = [e.reward for e in episodes.filter(step=step)]
        assert abs(sum(mine) / len(mine) - mean) < 1e-4, (step, mine, mean)
