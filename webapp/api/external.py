"""/api/v1/runs/external and a run's /log, /heartbeat and /finish: training launched elsewhere, reported through
the Python client (client/). The work is webapp.runs.external's; this only reads and answers."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from webapp.api.auth import write_required
from webapp.api.presenters import run_out
from webapp.api.responses import answers
from webapp.api.schemas import BatchIn, BatchOut, ErrorOut, ExternalRunIn, FinishIn, RunOut, StateOut
from webapp.api.scope import team_run, team_version_named
from webapp.runs import external

router = Router(tags=["external runs"])


@router.post("/runs/external", response=answers(RunOut, write=True, status=201),
             summary="Start an external run: a script elsewhere trains, and reports through /log")  # fmt: skip
def external_run_create(request: HttpRequest, body: ExternalRunIn):
    token = write_required(request)
    version = team_version_named(request, body.environment, body.environment_version, field="environment",
                                 label_field="environment_version")  # fmt: skip
    run = external.external_run_create(
        team=token.team, user=token.user, env_version=version, name=body.name, model_name=body.model,
        config=body.config, max_steps=body.max_steps, tags=body.tags,
        external={"host": body.host, "command": body.command, "client": body.client},
    )  # fmt: skip
    return 201, run_out(run)


@router.post("/runs/{run_id}/log", response={**answers(BatchOut, write=True), 413: ErrorOut},
             summary="A batch of metrics and episodes, recorded once per batch_id")  # fmt: skip
def external_run_log(request: HttpRequest, run_id: int, body: BatchIn):
    write_required(request)
    if len(request.body) > external.MAX_BATCH_BYTES:
        return 413, {"detail": f"A batch is at most {external.MAX_BATCH_BYTES:,} bytes: send smaller ones.",
                     "errors": {}}  # fmt: skip
    return external.external_batch_record(
        run=team_run(request, run_id), key=body.batch_id,
        metrics=[m.dict() for m in body.metrics], episodes=[e.dict() for e in body.episodes],
    )  # fmt: skip


@router.post("/runs/{run_id}/heartbeat", response=answers(StateOut, write=True),
             summary="The script is alive (a run silent for long is crashed)")  # fmt: skip
def external_run_heartbeat(request: HttpRequest, run_id: int):
    write_required(request)
    run = external.external_heartbeat(run=team_run(request, run_id))
    return {"status": run.status, "cancel_requested": run.status == "cancelling"}


@router.post("/runs/{run_id}/finish", response=answers(RunOut, write=True), summary="How the external run ended")
def external_run_finish(request: HttpRequest, run_id: int, body: FinishIn):
    write_required(request)
    return run_out(external.external_run_finish(run=team_run(request, run_id), status=body.status, reason=body.reason))
