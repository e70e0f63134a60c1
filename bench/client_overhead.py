"""GRPO step time of a plain TRL script with the client's callback and episode tap (`trainyard.watch`), divided by
the same script without them; and the p99 of one `run.log()` call.

The script is TRL's own GRPOTrainer with guess-number's logic in-process and the tiny model, as a user's would be.
The server it reports to answers every request after 200 ms (a stub HTTP server in this process, standing for a
far or busy Trainyard: what is measured is the client's cost to training, which must not wait on the network).
Median step time, the least disturbed of alternating rounds; one JSON line last (goal <= 1.02, p99 log <= 1 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from smoke import HELP, smoke_marked
from step_timing import step_timer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = Path(tempfile.mkdtemp(prefix="trainyard-bench-"))
os.environ.setdefault("TRAINYARD_DATA_DIR", str(DATA))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ["TRAINYARD_SPOOL_DIR"] = str(DATA / "spool")
DELAY = 0.2


class SlowApi(BaseHTTPRequestHandler):
    """Answers the client's endpoints as Trainyard does, 200 ms late."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(DELAY)
        if self.path.endswith("/runs/external"):
            body = {"id": 1, "name": "bench"}
        else:
            body = {"duplicate": False, "metrics": 0, "episodes": 0, "status": "running", "cancel_requested": False}
        data = json.dumps(body).encode()
        self.send_response(201 if self.path.endswith("/external") else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


def guess_number_class():
    from envs.guess_number.models import GuessAction
    from envs.guess_number.server.environment import GuessNumberEnvironment

    class GuessNumber:
        def __init__(self):
            self.env = GuessNumberEnvironment()
            self.reward = 0.0

        def reset(self, **kwargs) -> str:
            self.reward = 0.0
            return self.env.reset(seed=kwargs.get("seed")).message

        def guess(self, number: int) -> str:
            """Guess the hidden number. The reply says whether the hidden number is higher or lower.

            Args:
                number: Your guess: a whole number within the announced range.
            """
            observation = self.env.step(GuessAction(number=number))
            self.reward += observation.reward or 0.0
            return observation.message

    return GuessNumber


def log_p99(url: str, calls: int) -> float:
    """p99 of `run.log()` with 20 metrics, while the sender posts to the slow server behind it."""
    import trainyard

    run = trainyard.init(url=url, token="ty_bench", environment="guess-number", flush_every=0.05)
    timings = []
    for step in range(calls):
        started = time.perf_counter()
        run.log({f"metric_{i}": step * 0.1 + i for i in range(20)}, step=step)
        timings.append(time.perf_counter() - started)
    run.finish(timeout=30)
    return sorted(timings)[int(len(timings) * 0.99)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="alternate without and with the client this often")
    parser.add_argument("--log-calls", type=int, default=20_000)
    parser.add_argument("--smoke", action="store_true", help=HELP)
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.warmup, args.rounds, args.log_calls = 1, 1, 1, 500

    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    import django

    django.setup()
    import trainyard
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from workers.models.tiny import ensure_tiny_model

    model = str(ensure_tiny_model(progress=lambda m, f: print(f"… {m}", file=sys.stderr)))
    prompt = [{"role": "user", "content": "Find the hidden whole number from 1 to 16 with the guess tool."}]
    total = args.steps + args.warmup
    dataset = Dataset.from_dict({"prompt": [prompt] * 4 * total, "seed": list(range(4 * total))})

    def reward(environments, **kwargs):
        return [env.reward for env in environments]

    results: dict[str, list[float]] = {"without": [], "with_client": []}
    try:
        for label in ["without", "with_client"] * args.rounds:
            timer = step_timer()
            trainer = GRPOTrainer(
                model=model, reward_funcs=reward, train_dataset=dataset, environment_factory=guess_number_class(),
                callbacks=[timer],
                args=GRPOConfig(output_dir=str(DATA / label), max_steps=total, per_device_train_batch_size=4,
                                num_generations=4, max_completion_length=128, max_tool_calling_iterations=3,
                                learning_rate=1e-5, logging_steps=1, report_to="none", use_cpu=True, seed=0,
                                save_strategy="no", disable_tqdm=True, temperature=0.7),
            )  # fmt: skip
            if label == "with_client":
                trainyard.watch(trainer, url=url, token="ty_bench", environment="guess-number", name="bench")
            trainer.train()
            results[label].append(statistics.median(timer.times[args.warmup :]))
            print(f"{label}: median step {results[label][-1] * 1e3:.1f} ms", file=sys.stderr)
        p99 = log_p99(url, args.log_calls)
    finally:
        server.shutdown()
    best = {label: min(times) for label, times in results.items()}  # machine noise only ever adds time
    ratio = best["with_client"] / best["without"]
    print(f"step ratio x{ratio:.3f}; p99 of run.log() {p99 * 1e3:.3f} ms", file=sys.stderr)
    print(json.dumps(smoke_marked({
        "metric": "grpo_step_time_ratio_with_client", "value": round(ratio, 4), "unit": "ratio",
        "goal": "<= 1.02 (and p99 of run.log() <= 1 ms)",
        "baseline": {"plain_trl_median_step_ms": round(best["without"] * 1e3, 1)},
        "with_client_median_step_ms": round(best["with_client"] * 1e3, 1),
        "log_p99_ms": round(p99 * 1e3, 4), "server_delay_ms": DELAY * 1e3,
    })))  # fmt: skip


if __name__ == "__main__":
    main()
