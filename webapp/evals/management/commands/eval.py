"""`manage.py eval create --model M --env SLUG[@VERSION] [--env …] --episodes N --k K [--greedy] --wait --json`,
`manage.py eval show ID --json`, `manage.py eval cancel ID`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from webapp.accounts.models import Team
from webapp.catalog.management.commands.env import environment_resolve
from webapp.core.cli_errors import validation_text
from webapp.core.follow import progress_follow
from webapp.evals import services
from webapp.evals.episode_budget import DEFAULT_MAX_TOKENS
from webapp.evals.models import FINISHED, Evaluation
from webapp.evals.selectors import evaluation_summary


def version_resolve(text: str, team: str | None):
    slug, _, label = text.partition("@")
    environment = environment_resolve(slug, team)
    versions = environment.versions.all()
    version = versions.filter(label=label).first() if label else versions.first()
    if version is None:
        raise CommandError(f"{slug} has no version {label!r}")
    return version


def evaluation_follow(evaluation: Evaluation, *, timeout: float) -> Evaluation:
    """A progress bar of the evaluation's episodes with its status, until it ends."""
    return progress_follow(evaluation, total=evaluation.episodes_total, done=lambda e: e.episodes_done,
                           finished=tuple(FINISHED), unit="episode", file=sys.stderr, timeout=timeout)  # fmt: skip


class Command(BaseCommand):
    help = "Evaluate models on held-out episodes of environment versions."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="queue an evaluation on a worker")
        create.add_argument(
            "--model", required=True, help="tiny-local, tiny-local@ENV:V, a Hub id, a path, run:ID/final"
        )
        create.add_argument("--env", required=True, action="append", help="SLUG[@VERSION]; repeat for several")
        create.add_argument("--team", help="team slug (default: the first environment's team)")
        create.add_argument("--episodes", type=int, default=32, help="seeds from --seed-start (default 32)")
        create.add_argument("--seed-start", type=int, default=1_000_000)
        create.add_argument("--seeds", default="", help="explicit seeds, e.g. 1000-1063,2000")
        create.add_argument("--prompts", help="a file of prompts, one per line (one episode each)")
        create.add_argument("--k", type=int, default=1, help="samples per episode (avg@k, pass@k)")
        decoding = create.add_mutually_exclusive_group()
        decoding.add_argument("--greedy", action="store_true", default=True, help="greedy decoding (the default)")
        decoding.add_argument("--sample", dest="greedy", action="store_false", help="sample with --temperature/--top-p")
        create.add_argument("--temperature", type=float, default=1.0)
        create.add_argument("--top-p", type=float, default=1.0)
        create.add_argument("--max-turns", type=int, default=6)
        create.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS)
        create.add_argument("--provider", choices=["process", "docker", "url"])
        create.add_argument("--name", default="")
        create.add_argument("--wait", action="store_true", help="wait for the end, with a progress bar")
        create.add_argument("--timeout", type=float, default=3600)
        create.add_argument("--json", action="store_true")
        show = sub.add_parser("show", help="print an evaluation's aggregates")
        show.add_argument("evaluation_id", type=int)
        show.add_argument("--json", action="store_true")
        cancel = sub.add_parser("cancel", help="stop an evaluation")
        cancel.add_argument("evaluation_id", type=int)

    def handle(self, *args, **options) -> None:
        action = options["action"]
        if action in {"show", "cancel"}:
            evaluation = Evaluation.objects.filter(pk=options["evaluation_id"]).first()
            if evaluation is None:
                raise CommandError(f"no evaluation {options['evaluation_id']}")
            if action == "cancel":
                evaluation.status = services.evaluation_cancel(user=None, evaluation=evaluation).status
            self.emit(evaluation, as_json=options.get("json", True))
            return
        versions = [version_resolve(text, options["team"]) for text in options["env"]]
        team = Team.objects.get(slug=options["team"]) if options["team"] else versions[0].environment.team
        prompts = None
        if options["prompts"]:
            prompts = [line for line in Path(options["prompts"]).read_text().splitlines() if line.strip()]
        try:
            evaluation = services.evaluation_create(
                team=team, user=None, model_name=options["model"], versions=versions, episodes=options["episodes"],
                seed_start=options["seed_start"], seeds=options["seeds"], prompts=prompts, k=options["k"],
                greedy=options["greedy"], temperature=options["temperature"], top_p=options["top_p"],
                max_turns=options["max_turns"], max_tokens=options["max_tokens"], provider=options["provider"],
                name=options["name"],
            )  # fmt: skip
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from exc
        if options["wait"]:
            evaluation = evaluation_follow(evaluation, timeout=options["timeout"])
        self.emit(evaluation, as_json=options["json"])
        if options["wait"] and evaluation.status != "succeeded":
            raise CommandError(f"evaluation {evaluation.pk} ended {evaluation.status}: {evaluation.failure_reason}")

    def emit(self, evaluation: Evaluation, *, as_json: bool) -> None:
        summary = evaluation_summary(evaluation)
        if as_json:
            self.stdout.write(json.dumps(summary, indent=2))
            return
        self.stdout.write(f"evaluation {evaluation.pk} {evaluation.name}: {evaluation.status} "
                          f"({evaluation.episodes_done}/{evaluation.episodes_total} episodes)")  # fmt: skip
        for key, result in summary["results"].items():
            self.stdout.write(
                f"  {key}: mean reward {result['mean_reward']['value']:.3f} "
                f"[{result['mean_reward']['low']:.3f}, {result['mean_reward']['high']:.3f}], "
                f"success {result['success_rate']['value']:.1%}, pass@1 {result['pass@1']['value']:.1%}"
            )
