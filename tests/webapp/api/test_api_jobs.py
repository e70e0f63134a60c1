"""Long work asked through the API is a job that a worker does; the API answers at once and the job says how far."""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.worker.jobs import run_job

pytestmark = pytest.mark.django_db

MAZE = Path(__file__).resolve().parents[2] / "fixtures" / "envs" / "metadata_maze"


def test_an_environment_added_through_the_api_is_a_job_whose_result_names_it(acme, globex, alice, charlie, api,
                                                                            token_for):  # fmt: skip
    write = token_for(alice, acme, "write")
    queued = api.post("/environments", write, {"name": "maze", "source_kind": "folder", "source_ref": str(MAZE)})
    assert queued.status_code == 202 and queued.json()["status"] == "queued", queued.content
    job_id = queued.json()["id"]
    assert api.get(f"/jobs/{job_id}", token_for(charlie, globex)).status_code == 404

    run_job(job_id)  # what the worker that takes it runs (tests/workers covers the queue itself)
    done = api.get(f"/jobs/{job_id}", write).json()
    assert done["status"] == "succeeded" and done["progress"] == 1.0, done
    listed = api.get("/environments", write, search="maze").json()["items"]
    assert [e["id"] for e in listed] == [done["result"]["environment"]] and listed[0]["versions"]

    again = api.post("/environments", write, {"name": "maze", "source_kind": "folder", "source_ref": str(MAZE)})
    run_job(again.json()["id"])
    failed = api.get(f"/jobs/{again.json()['id']}", write).json()
    assert failed["status"] == "failed" and "name" in failed["errors"]  # the field, as the form would say it
    bad = api.post("/environments", write, {"name": "x", "source_kind": "ftp", "source_ref": "ftp://x"})
    assert bad.status_code == 422 and "source_kind" in bad.json()["errors"]
    assert api.post("/environments", token_for(alice, acme), {"name": "y", "source_kind": "folder",
                                                              "source_ref": str(MAZE)}).status_code == 403  # fmt: skip


def test_a_new_version_through_the_api_is_a_job_too(acme, globex, alice, charlie, api, token_for):
    write = token_for(alice, acme, "write")
    added = api.post("/environments", write, {"name": "maze", "source_kind": "folder", "source_ref": str(MAZE)})
    run_job(added.json()["id"])
    environment = api.get(f"/jobs/{added.json()['id']}", write).json()["result"]["environment"]
    body = {"label": "1.1.0", "source_kind": "folder", "source_ref": str(MAZE), "settings": {"env": {"LEVEL": "2"}}}
    assert api.post(f"/environments/{environment}/versions", token_for(charlie, globex, "write"),
                    body).status_code == 404  # fmt: skip
    queued = api.post(f"/environments/{environment}/versions", write, body)
    assert queued.status_code == 202, queued.content
    run_job(queued.json()["id"])
    done = api.get(f"/jobs/{queued.json()['id']}", write).json()
    assert done["status"] == "succeeded" and done["result"]["label"] == "1.1.0", done
    labels = {v["label"] for v in api.get(f"/environments/{environment}", write).json()["versions"]}
    assert labels == {"1.0.0", "1.1.0"}
