"""Metric points per second and episodes per second written through the recorder into PostgreSQL
(goals >= 20,000 and >= 500). Baseline in the same run: a bare bulk insert of the same points (no rollups, no
events, no publishing)."""

from __future__ import annotations

import json
import time

from pg_setup import make_run, setup, teardown
from smoke import SMOKE, smoke_marked

STEPS = 40 if SMOKE else 4000
METRICS = 40  # TRL logs about this many values a step
BATCHES = 2 if SMOKE else 40
ROLLOUTS = 32


class FakeEnv:
    """What the recorder reads of an environment instance: its episode log."""

    def __init__(self, log) -> None:
        self.episode = log


def main() -> None:
    setup()
    try:
        from envs.adapter import EpisodeLog, ToolEvent
        from webapp.live.publish import flush
        from webapp.runs.models import MetricPoint
        from workers.training.recording import EpisodeRecorder, MetricRecorder

        run = make_run()
        names = [f"group{i % 5}/metric{i}" for i in range(METRICS)]
        recorder = MetricRecorder(run)
        started = time.perf_counter()
        for step in range(1, STEPS + 1):
            recorder.record(step, {name: (step * 31 + i) % 97 / 97 for i, name in enumerate(names)})
        recorder.flush()
        flush(30)
        ours = STEPS * METRICS / (time.perf_counter() - started)

        baseline_run = type(run).objects.create(team=run.team, name="baseline", env_version=run.env_version,
                                                model_name="x", config={})  # fmt: skip
        started = time.perf_counter()
        batch = []
        for step in range(1, STEPS + 1):
            batch += [MetricPoint(run=baseline_run, name=name, step=step, value=0.5, wall_time=1.0) for name in names]
            if len(batch) >= 5000:
                MetricPoint.objects.bulk_create(batch)
                batch = []
        MetricPoint.objects.bulk_create(batch)
        baseline = STEPS * METRICS / (time.perf_counter() - started)

        episodes = EpisodeRecorder(run, group_size=4)
        call = {"type": "function", "function": {"name": "guess", "arguments": {"number": 8}}}
        completion = [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {
                "role": "tool",
                "name": "guess",
                "content": '{"message": "The number is higher than 8.", "hint": "higher"}',
            },
        ] * 3
        started = time.perf_counter()
        for b in range(BATCHES):
            envs = []
            for i in range(ROLLOUTS):
                log = EpisodeLog(episode_id=f"{b}-{i}", reset_kwargs={"seed": i})
                log.events = [
                    ToolEvent("guess", {"number": 8}, "higher", {"hint": "higher"}, 0.0, False, None, 0.001)
                ] * 3
                envs.append(FakeEnv(log))
            episodes.record(step=b + 1, prompts=[[{"role": "user", "content": "Find the number."}]] * ROLLOUTS,
                            completions=[completion] * ROLLOUTS, environments=envs,
                            rewards=[float(i % 4 == 0) for i in range(ROLLOUTS)])  # fmt: skip
        flush(30)
        episodes_per_s = BATCHES * ROLLOUTS / (time.perf_counter() - started)
        print(f"metric points: {ours:,.0f}/s through the recorder (rollups, events, publishing); "
              f"bare bulk insert {baseline:,.0f}/s")  # fmt: skip
        print(f"episodes: {episodes_per_s:,.0f}/s through the recorder, in batches of {ROLLOUTS}")
        print(
            json.dumps(
                smoke_marked(
                    {
                        "metric": "ingest_metric_points_per_s",
                        "value": round(ours),
                        "unit": "points/s",
                        "goal": ">= 20000 points/s and >= 500 episodes/s",
                        "baseline": {"bare_bulk_insert_points_per_s": round(baseline)},
                        "ratio_vs_bare": round(ours / baseline, 3),
                        "episodes_per_s": round(episodes_per_s),
                    }
                )
            )
        )
    finally:
        teardown()


if __name__ == "__main__":
    main()
