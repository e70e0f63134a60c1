"""`manage.py run create --env SLUG --model tiny-local --max-steps N [--provider process|docker] [--wait] --json`,
`manage.py run show ID`, `run cancel ID` and `run resume ID [--checkpoint NAME] [--wait] [--json]`."""

from __future__ import annotations

import getpass
import json
import sys
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from webapp.accounts.models import Team
from webapp.artifacts.saved_models import saved_models
from webapp.catalog.management.commands.env import environment_resolve
from webapp.core.cli_errors import validation_text
from webapp.runs import services
from webapp.runs.grpo import GENERATION_BACKENDS
from webapp.runs.models import Run
from webapp.runs.selectors import environment_activity, run_follow


def run_summary(run: Run) -> dict:
    return {
        "id": run.pk,
        "name": run.name,
        "owner": run.created_by.username if run.created_by else None,
        "status": run.status,
        "failure_reason": run.failure_reason,
        "environment": str(run.env_version),
        "model": run.model_name,
        "provider": run.provider,
        "step": run.step,
        "max_steps": run.max_steps,
        "metric_steps": run.metrics.values("step").distinct().count(),
        "episodes": run.episodes.count(),
        "episodes_with_tool_calls": run.episodes.filter(num_tool_calls__gt=0).count(),
        "env_tool_calls": run.env_tool_calls,
        "env_tool_errors": run.env_tool_errors,
        "env_tool_calls_per_episode": run.env_calls_per_episode,
        "never_stepped_environment": run.never_stepped,
        "replicas": run.replicas,
        "environments": environment_activity(run=run) if run.environments else [],
        "evals": [
            {"step": e.step, "status": e.status, "id": e.pk, "results": e.results}
            for e in run.evaluations.order_by("step")
        ],
        # Where it ran (HOST#PIDNS:PID, also while it runs) and what it resumed from; its saved models in the store.
        "worker_host": run.worker_host,
        "resume_from": run.resume_from,
        "saved_models": [m.name for m in saved_models(run)],
        "parent": {"run": run.parent_id, "model": run.parent_model, "step": run.parent_step} if run.parent_id else None,
    }


class Command(BaseCommand):
    help = "Create and follow training runs."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="queue a GRPO run on a worker")
        create.add_argument("--env", required=True, help="environment slug")
        create.add_argument("--env-version", help="version label (default: the latest)")
        create.add_argument("--team", help="team slug (default: the environment's team)")
        create.add_argument("--model", default="tiny-local")
        create.add_argument("--max-steps", type=int, default=20)
        create.add_argument("--provider", choices=["process", "docker", "url"])
        create.add_argument("--replicas", type=int, default=None, help="default: as many as a step's sessions need")
        create.add_argument("--config", default="{}", help="GRPO settings as JSON, e.g. '{\"num_generations\": 4}'")
        create.add_argument("--lora-r", type=int, help="LoRA rank (0 or absent: full fine-tuning)")
        create.add_argument("--lora-alpha", type=int)
        create.add_argument("--lora-dropout", type=float)
        create.add_argument("--lora-target-modules", help="all-linear, or q_proj,v_proj,...")
        create.add_argument("--generation-backend", choices=GENERATION_BACKENDS)
        create.add_argument("--vllm-server-url")
        create.add_argument("--gpus", type=int, help="GPUs the run needs on one worker (on Slurm: per node)")
        create.add_argument("--cluster", choices=["slurm"], help="hand it to the Slurm cluster (the slurm queue)")
        create.add_argument("--nodes", type=int, help="Slurm nodes (with --cluster slurm)")
        create.add_argument("--slurm-time-minutes", type=int, help="the Slurm job's time limit")
        create.add_argument("--slurm-partition")
        create.add_argument("--slurm-account")
        create.add_argument("--slurm-qos")
        create.add_argument("--advanced", help="other GRPOConfig fields as JSON or YAML text, or @FILE")
        create.add_argument(
            "--mix",
            action="append",
            default=[],
            metavar="SLUG[@VERSION]:WEIGHT",
            help="also train on this environment (repeatable); rows are routed by weight",
        )
        create.add_argument("--env-weight", type=float, default=1.0, help="--env's weight in a mixture")
        create.add_argument("--name", default="")
        create.add_argument(
            "--user",
            help="who creates it, a member of the team (default: this login's name, when "
            "a member has it): the runs list shows them as its owner",
        )
        create.add_argument("--trust-override-reason", default="",
                            help="why this run may start on a version whose trust check failed")  # fmt: skip
        create.add_argument(
            "--eval-steps", type=int, help="evaluate on held-out seeds at step 0, every N steps, the end"
        )
        create.add_argument("--eval-seeds", help="held-out seeds, e.g. 1000000-1000031 (default: a fixed held-out set)")
        create.add_argument("--eval-k", type=int, help="samples per held-out seed (default 1)")
        create.add_argument("--eval-sample", action="store_true", help="sample the evals (default: greedy decoding)")
        create.add_argument("--wait", action="store_true", help="wait for the run to finish, with a progress bar")
        create.add_argument("--timeout", type=float, default=3600)
        create.add_argument("--json", action="store_true")
        cancel = sub.add_parser("cancel", help="ask a run to stop")
        cancel.add_argument("run_id", type=int)
        show = sub.add_parser("show", help="print a run's summary")
        show.add_argument("run_id", type=int)
        resume = sub.add_parser("resume", help="queue a finished run again from its last checkpoint in the store")
        resume.add_argument("run_id", type=int)
        resume.add_argument("--checkpoint", help="a checkpoint name, e.g. checkpoint-4 (default: the last one)")
        resume.add_argument("--wait", action="store_true", help="wait for the run to finish, with a progress bar")
        resume.add_argument("--timeout", type=float, default=3600)
        resume.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        action = options["action"]
        if action == "cancel":
            run = self.run_of(options)
            services.run_request_cancel(run=run, user=None)
            self.stdout.write(json.dumps(run_summary(run)))
            return
        if action == "show":
            self.stdout.write(json.dumps(run_summary(self.run_of(options)), indent=2))
            return
        if action == "resume":
            self.resume(options)
            return
        environment = environment_resolve(options["env"], None)
        versions = environment.versions.all()
        version = versions.filter(label=options["env_version"]).first() if options["env_version"] else versions.first()
        if version is None:
            raise CommandError(f"{environment.slug} has no such version")
        team = Team.objects.get(slug=options["team"]) if options["team"] else environment.team
        user = self.owner(team, options["user"])
        try:
            config = json.loads(options["config"])
        except ValueError as exc:
            raise CommandError(f"--config is not JSON: {exc}") from None
        config["max_steps"] = options["max_steps"]
        for name in ("lora_r", "lora_alpha", "lora_dropout", "lora_target_modules", "generation_backend",
                     "vllm_server_url", "gpus", "eval_steps", "eval_seeds", "eval_k", "cluster", "nodes",
                     "slurm_time_minutes", "slurm_partition", "slurm_account", "slurm_qos"):  # fmt: skip
            if options[name] is not None:
                config[name] = options[name]
        if options["eval_sample"]:
            config["eval_greedy"] = False
        if options["advanced"]:
            text = options["advanced"]
            config["advanced"] = Path(text[1:]).read_text() if text.startswith("@") else text
        from webapp.catalog.models import EnvironmentVersion
        from webapp.runs.mixture import mixture_parse

        lines = "\n".join(m.replace(":", " ", 1) if ":" in m else m for m in options["mix"])
        candidates = list(EnvironmentVersion.objects.filter(environment__team=team).select_related("environment"))
        try:
            mixture = mixture_parse(lines, candidates)
            run = services.run_create(
                team=team, user=user, env_version=version, model_name=options["model"], config=config,
                mixture=mixture, env_weight=options["env_weight"],
                replicas=options["replicas"], provider=options["provider"], name=options["name"],
                trust_override_reason=options["trust_override_reason"],
            )  # fmt: skip
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from exc
        self.report(run, options)

    @staticmethod
    def owner(team: Team, name: str | None):
        """The run's owner: --user (who must be a member who may create runs), else the member whose username is
        this login's, else nobody (the runs list then says the command line made it)."""
        from webapp.accounts.models import Membership, Role

        try:
            login = name or getpass.getuser()
        except (KeyError, OSError):  # a container's uid with no name
            login = ""
        membership = Membership.objects.filter(team=team, user__username=login).first() if login else None
        if membership is None or not membership.allows(Role.MEMBER):
            if name:
                raise CommandError(f"--user: {name} is not a member of {team.slug} who may create runs")
            return None
        return membership.user

    @staticmethod
    def run_of(options: dict) -> Run:
        run = Run.objects.filter(pk=options["run_id"]).first()
        if run is None:
            raise CommandError(f"there is no run {options['run_id']}")
        return run

    def resume(self, options: dict) -> None:
        run = self.run_of(options)
        checkpoint = options["checkpoint"]
        if checkpoint and checkpoint not in {m.name for m in saved_models(run)} - {"final"}:
            raise CommandError(f"--checkpoint: run {run.pk} has no {checkpoint} in the artifact store")
        try:
            run = services.run_resume(run=run, user=None, checkpoint=checkpoint)
        except ValidationError as exc:
            raise CommandError(validation_text(exc)) from None
        self.report(run, options)

    def report(self, run: Run, options: dict) -> None:
        if options["wait"]:
            run = run_follow(run, file=sys.stderr, timeout=options["timeout"])
        summary = run_summary(run)
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2))
        else:
            self.stdout.write(f"run {run.pk} {run.name}: {run.status} ({summary['metric_steps']} steps, "
                              f"{summary['episodes']} episodes)")  # fmt: skip
        if options["wait"] and run.status != "succeeded":
            raise CommandError(f"run {run.pk} ended {run.status}: {run.failure_reason}")
        idle = [e["key"] for e in summary["environments"] if e["never_stepped"]]
        if options["wait"] and idle and not run.never_stepped:
            raise CommandError(f"run {run.pk} succeeded but no tool call of its {', '.join(idle)} episodes reached "
                               "that environment: it learned nothing from it")  # fmt: skip
        if options["wait"] and run.never_stepped:
            raise CommandError(f"run {run.pk} succeeded but no tool call of its {run.episodes_recorded} episodes "
                               f"reached the environment: it learned nothing from it")  # fmt: skip
