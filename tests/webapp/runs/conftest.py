from __future__ import annotations

from webapp.catalog.models import Environment, EnvironmentVersion
from webapp.catalog.services import environment_create


def register_builtin(team, slug: str) -> EnvironmentVersion:
    existing = Environment.objects.filter(team=team, slug=slug).first()
    if existing:
        return existing.versions.first()
    env = environment_create(team=team, user=None, name=slug, slug=slug, source_kind="builtin", source_ref=slug,
                             description="Find a hidden whole number from higher/lower hints.")  # fmt: skip
    return env.versions.get()


PLAYED = [
    {"role": "assistant", "content": "", "tool_calls": [{"name": "guess", "arguments": {"number": 8}}]},
    {"role": "tool", "name": "guess", "content": "The number is higher than 8.", "reward": 0.0, "done": False,
     "error": None, "seconds": 0.012, "at": 0.35},
]  # fmt: skip


def recorded_run(team, user, *, steps: int = 30, max_steps: int = 40):
    """A run as a trainer records it, without training: the series TRL logs (a reward that rises, a learning rate
    around 1e-4 that decays, tokens in the millions, clip ratios), GRPO groups of 4 episodes a step (one group of
    zero spread each step), and held-out evals at steps 0 and `steps` with their intervals."""
    from webapp.evals.models import EvalStatus, Evaluation
    from webapp.runs.ingest import metrics_ingest
    from webapp.runs.models import Episode
    from webapp.runs.services import run_create

    version = register_builtin(team, "guess-number")
    run = run_create(team=team, user=user, env_version=version, start=False, config={"max_steps": max_steps})
    run.max_steps = max_steps
    run.save(update_fields=["max_steps"])
    batch = []
    for step in range(1, steps + 1):
        values = {"reward": 0.2 + 0.02 * step, "reward_std": 0.1, "learning_rate": 1e-4 * (1 - step / max_steps),
                  "num_tokens": 1.0e6 + 4.0e4 * step, "kl": 0.001 * step, "entropy": 0.9, "loss": 0.01,
                  "clip_ratio/region_mean": 0.01, "completions/mean_length": 30.0 + step,
                  "frac_reward_zero_std": 0.5, "tools/call_frequency": 1.2,
                  "tools/failure_frequency": 0.05}  # fmt: skip
        batch.append((step, 1000.0 + step, values))
    batch.append((0, 999.0, {"eval/mean_reward": 0.2, "eval/mean_reward_low": 0.1, "eval/mean_reward_high": 0.3,
                             "eval/loss": 0.02}))  # fmt: skip
    batch.append((steps, 1000.0 + steps, {"eval/mean_reward": 0.6, "eval/mean_reward_low": 0.5,
                                          "eval/mean_reward_high": 0.7}))  # fmt: skip
    metrics_ingest(run.pk, batch, team_id=team.pk, max_steps=max_steps)
    episodes = []
    for step in range(1, steps + 1):
        for group, rewards in enumerate(([0.0, 1.0, 0.5, 1.0], [0.0, 0.0, 0.0, 0.0])):
            for index, reward in enumerate(rewards):
                turns = PLAYED if step == steps and group == 0 else []
                episodes.append(Episode(run=run, step=step, group=group, index_in_group=index, prompt="Play",
                                        reward=reward, turns=turns, num_tool_calls=len(turns) // 2))  # fmt: skip
    Episode.objects.bulk_create(episodes)
    # The last step's first group token by token, as the trainer's forward pass records it: an assistant turn
    # (trained on), a tool's result (not), and the answer; log-probabilities falling along the completion.
    from webapp.runs.token_traces import trace_build

    tokens = ["<tool_call>", '{"name": "guess"', ', "number": 8}', "</tool_call>", "The number", " is higher",
              "<tool_call>", '{"number": 12}', "</tool_call>"]  # fmt: skip
    trained = [1, 1, 1, 1, 0, 0, 1, 1, 1]
    for index, reward in enumerate([0.0, 1.0, 0.5, 1.0]):
        advantage = (reward - 0.625) / 0.41
        trace = trace_build(run_id=run.pk, step=steps, rank=0, group=0, index=index, tokens=tokens,
                                 logprobs=[-0.05 - 0.4 * i for i in range(9)], entropies=[0.1 * i for i in range(9)],
                                 advantages=[advantage] * 9, trained=trained)  # fmt: skip
        trace.save()
    for step, mean in ((0, 0.2), (steps, 0.6)):
        interval = {"value": mean, "low": mean - 0.1, "high": mean + 0.1}
        Evaluation.objects.create(team=team, name=f"{run.name} @ {step}", model_name="tiny-local", env_version=version,
                                  versions=[{"version": version.pk, "key": "guess-number", "threshold": 0.0}],
                                  run=run, step=step, status=EvalStatus.SUCCEEDED, settings_key="k",
                                  results={"guess-number": {"mean_reward": interval, "success_rate": interval,
                                                            "episodes": 8}})  # fmt: skip
    return run
