"""External runs through the API: a script elsewhere reports batches once each, beats, ends, or is crashed."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.live.models import RunEvent
from webapp.runs.external import external_runs_crash
from webapp.runs.models import Episode, MetricPoint, Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def write(acme, alice, guess_version, token_for):
    return token_for(alice, acme, "write")


def external_run(api, token, **fields) -> dict:
    body = {"environment": "guess-number", "name": "my grpo script", "model": "Qwen/Qwen3-0.6B", "max_steps": 10,
            "host": "gpu-box-7", "command": "python train.py", **fields}  # fmt: skip
    answer = api.post("/runs/external", token, body)
    assert answer.status_code == 201, answer.content
    return answer.json()


EPISODE = {
    "step": 1, "group": 0, "reward": 1.0, "prompt": "Guess the number between 1 and 100.",
    "turns": [
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "guess", "arguments": {"n": 50}}}]},
        {"role": "tool", "name": "guess", "content": "lower", "reward": 0.0},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "guess", "arguments": {"n": 25}}}]},
        {"role": "tool", "name": "guess", "content": "correct", "reward": 1.0, "done": True},
    ],
}  # fmt: skip


def test_a_script_s_batches_are_recorded_once_and_published_like_a_worker_s(api, write):
    run = external_run(api, write)
    assert run["kind"] == "external" and run["status"] == "running" and run["external"]["host"] == "gpu-box-7"
    batch = {"batch_id": "b-1", "metrics": [{"step": 1, "values": {"reward": 0.5, "loss": 0.1}},
                                            {"step": 2, "values": {"reward": 0.75, "note": None}}],
             "episodes": [EPISODE, {**EPISODE, "reward": 0.0, "turns": EPISODE["turns"][:2]}]}  # fmt: skip
    first = api.post(f"/runs/{run['id']}/log", write, batch)
    assert first.status_code == 200 and first.json()["duplicate"] is False, first.content
    assert first.json()["metrics"] == 3 and first.json()["episodes"] == 2  # a null is no point
    again = api.post(f"/runs/{run['id']}/log", write, batch)  # the client retried: its answer was lost
    assert again.json()["duplicate"] is True

    assert MetricPoint.objects.filter(run_id=run["id"]).count() == 3
    episodes = Episode.objects.filter(run_id=run["id"]).order_by("index_in_group")
    assert [e.index_in_group for e in episodes] == [0, 1] and [e.num_tool_calls for e in episodes] == [2, 1]
    assert episodes[0].advantage > 0 > episodes[1].advantage  # GRPO's, from the group's two members
    assert episodes[0].turns[1] == {"role": "tool", "name": "guess", "content": "lower", "reward": 0.0,
                                    "done": None, "error": None}  # fmt: skip
    stored = Run.objects.get(pk=run["id"])
    assert stored.step == 2 and stored.episodes_recorded == 2 and stored.env_tool_calls == 3
    kinds = list(RunEvent.objects.filter(run_id=run["id"]).values_list("type", flat=True))
    assert kinds.count("run.metrics") == 2 and kinds.count("run.episode") == 2  # the page's live deltas

    shown = api.get(f"/runs/{run['id']}/metrics", write, names="reward").json()["series"]["reward"]
    assert shown["step"] == [1, 2] and shown["value"] == [0.5, 0.75]
    assert api.get(f"/runs/{run['id']}/episodes", write).json()["count"] == 2


def test_a_batch_over_its_bounds_is_refused_whole(api, write):
    run = external_run(api, write)
    too_many = {"batch_id": "big", "metrics": [{"step": 1, "values": {f"m{i}": i for i in range(1001)}}]}
    answer = api.post(f"/runs/{run['id']}/log", write, too_many)
    assert answer.status_code == 422 and "metrics" in json.dumps(answer.json()["errors"])
    split = {
        "batch_id": "split",
        "metrics": [{"step": s, "values": {f"m{i}": i for i in range(100)}} for s in range(11)],
    }
    answer = api.post(f"/runs/{run['id']}/log", write, split)
    assert answer.status_code == 422 and "at most 1000 metric values" in answer.json()["detail"]
    huge = {"batch_id": "huge", "episodes": [{**EPISODE, "prompt": "x" * 200_000} for _ in range(6)]}
    assert api.post(f"/runs/{run['id']}/log", write, huge).status_code == 413
    bad = {"batch_id": "bad", "episodes": [{**EPISODE, "reward": "lots"}]}
    assert api.post(f"/runs/{run['id']}/log", write, bad).status_code == 422
    assert not MetricPoint.objects.exists() and not Episode.objects.exists()
    assert api.post(f"/runs/{run['id']}/log", write, {**too_many, "batch_id": ""}).status_code == 422


def test_a_silent_script_s_run_is_crashed_and_revived_when_it_reports_again(api, write):
    run = external_run(api, write)
    assert external_runs_crash(silent_for=30) == []
    Run.objects.filter(pk=run["id"]).update(heartbeat_at=timezone.now() - timedelta(seconds=31))
    assert external_runs_crash(silent_for=30) == [run["id"]]
    crashed = api.get(f"/runs/{run['id']}", write).json()
    assert crashed["status"] == "crashed" and "stopped reporting" in crashed["failure_reason"]

    beat = api.post(f"/runs/{run['id']}/heartbeat", write)  # it was only cut off
    assert beat.status_code == 200 and beat.json() == {"status": "running", "cancel_requested": False}
    finished = api.post(f"/runs/{run['id']}/finish", write, {"status": "succeeded"})
    assert finished.json()["status"] == "succeeded" and finished.json()["failure_reason"] == ""
    late = api.post(f"/runs/{run['id']}/log", write, {"batch_id": "late", "metrics": [{"step": 3, "values": {}}]})
    assert late.status_code == 409 and "has ended" in late.json()["detail"]


def test_a_cancel_from_the_page_reaches_the_script_which_ends_it(api, write, acme, alice, client_for):
    run = external_run(api, write)
    assert client_for(alice).post(f"/runs/{run['id']}/cancel/").status_code in (200, 302)
    answer = api.post(f"/runs/{run['id']}/log", write, {"batch_id": "b", "metrics": [{"step": 1, "values": {"a": 1}}]})
    assert answer.json()["cancel_requested"] is True
    ended = api.post(f"/runs/{run['id']}/finish", write, {"status": "cancelled", "reason": "cancelled in Trainyard"})
    assert ended.json()["status"] == "cancelled"


def test_external_runs_are_the_team_s_only_and_need_a_write_token(api, write, acme, globex, alice, charlie,
                                                                  token_for):  # fmt: skip
    run = external_run(api, write)
    assert (
        api.post("/runs/external", token_for(alice, acme, "read"), {"environment": "guess-number"}).status_code == 403
    )
    other = token_for(charlie, globex, "write")
    for path, body in ((f"/runs/{run['id']}/log", {"batch_id": "x"}), (f"/runs/{run['id']}/heartbeat", None),
                       (f"/runs/{run['id']}/finish", {"status": "failed"})):  # fmt: skip
        assert api.post(path, other, body).status_code == 404, path
    assert api.post("/runs/external", other, {"environment": "guess-number"}).status_code == 422  # not globex's
    worker_run = api.post("/runs", write, {"env": "guess-number", "max_steps": 2}).json()
    refused = api.post(f"/runs/{worker_run['id']}/log", write, {"batch_id": "x"})
    assert refused.status_code == 409 and "Trainyard worker" in refused.json()["detail"]
    assert api.post(f"/runs/{run['id']}/resume", write).status_code == 409


def test_the_pages_show_an_external_run_as_such(api, write, acme, alice, charlie, client_for):
    run = external_run(api, write)
    page = client_for(alice).get(f"/runs/{run['id']}/").content.decode()
    assert 'id="run-external"' in page and "gpu-box-7" in page and "python train.py" in page
    assert 'id="resume-form"' not in page  # its own script resumes it, not a worker
    listed = client_for(alice).get("/runs/").content.decode()
    assert "data-external" in listed and "my grpo script" in listed
    assert client_for(charlie).get(f"/runs/{run['id']}/").status_code == 404


def test_a_run_whose_episodes_never_reached_the_environment_says_so(api, write):
    run = external_run(api, write)
    talk_only = {**EPISODE, "turns": [{"role": "assistant", "content": "I think it is 8."}]}
    api.post(f"/runs/{run['id']}/log", write, {"batch_id": "b", "episodes": [talk_only, talk_only]})
    api.post(f"/runs/{run['id']}/finish", write, {"status": "succeeded"})
    shown = api.get(f"/runs/{run['id']}", write).json()
    assert shown["status"] == "succeeded" and shown["never_stepped_environment"] is True  # not a plain success
    stepped = external_run(api, write)
    api.post(f"/runs/{stepped['id']}/log", write, {"batch_id": "b", "episodes": [EPISODE]})
    assert api.get(f"/runs/{stepped['id']}", write).json()["never_stepped_environment"] is False
