"""Adding environments for real: the server is started and asked for its schema; failures save nothing."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from django.urls import reverse

from webapp.catalog.models import Environment, EnvironmentVersion
from webapp.jobs.models import Job
from workers.worker.jobs import run_job

FIXTURE_ENVS = Path(__file__).resolve().parents[2] / "fixtures" / "envs"


def add(client, **fields):
    data = {"name": "My game", "source_kind": "builtin", "source_ref": "guess-number", "label": "1.0.0",
            "capacity": 8, "visibility": "team", "tags": "Numbers, demo"}  # fmt: skip
    data.update(fields)
    return client.post(reverse("catalog:environment-create"), data)


def test_adding_a_builtin_discovers_its_tools(client_for, alice):
    response = add(client_for(alice))
    assert response.status_code == 302, response.content
    env = Environment.objects.get(slug="my-game")
    version = env.versions.get()
    assert env.tags == ["demo", "numbers"]
    assert [t["name"] for t in version.tools] == ["guess"]
    assert version.action_schema["title"] == "GuessAction"
    assert "secret" in version.state_schema["properties"]
    assert version.pinned_ref.startswith("sha256:")


def test_adding_a_local_folder_works_too(client_for, alice, settings):
    folder = Path(settings.BASE_DIR) / "envs" / "grid_catch"
    response = add(client_for(alice), name="Folder grid", source_kind="folder", source_ref=str(folder))
    assert response.status_code == 302
    assert [t["name"] for t in Environment.objects.get(slug="folder-grid").versions.get().tools] == ["move"]


def test_a_server_that_crashes_on_start_shows_on_the_form(client_for, alice):
    response = add(client_for(alice), source_kind="folder", source_ref=str(FIXTURE_ENVS / "crash_on_start"))
    assert response.status_code == 400
    errors = response.context["form"].errors["source_ref"]
    assert "this server refuses to start" in errors[0]
    assert not Environment.objects.exists() and not EnvironmentVersion.objects.exists()


def test_a_folder_that_is_not_an_environment_is_refused(client_for, alice, tmp_path):
    response = add(client_for(alice), source_kind="folder", source_ref=str(tmp_path))
    assert response.status_code == 400
    assert "not an OpenEnv folder" in response.context["form"].errors["source_ref"][0]
    assert not Environment.objects.exists()


def test_an_unreachable_url_shows_on_the_form(client_for, alice):
    response = add(client_for(alice), source_kind="url", source_ref="http://127.0.0.1:9")
    assert response.status_code == 400
    assert "did not answer" in response.context["form"].errors["source_ref"][0]
    assert not Environment.objects.exists()


class NoSchemaHandler(BaseHTTPRequestHandler):
    """Healthy, but its /schema is not an OpenEnv schema."""

    def do_GET(self):
        body = b'{"status": "healthy"}' if self.path == "/health" else b'{"action": "not a schema"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def bad_schema_server():
    server = HTTPServer(("127.0.0.1", 0), NoSchemaHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_a_bad_schema_shows_on_the_form(client_for, alice, bad_schema_server):
    response = add(client_for(alice), source_kind="url", source_ref=bad_schema_server)
    assert response.status_code == 400
    assert "does not describe itself" in response.context["form"].errors["source_ref"][0]
    assert not Environment.objects.exists()


def test_an_unknown_builtin_names_the_field(client_for, alice):
    response = add(client_for(alice), source_ref="chess")
    assert response.status_code == 400
    assert "Built-in environments are" in response.context["form"].errors["source_ref"][0]


def test_a_duplicate_name_names_the_field(client_for, alice):
    c = client_for(alice)
    add(c)
    response = add(c)
    assert response.status_code == 400
    assert "already has an environment" in response.context["form"].errors["name"][0]
    assert Environment.objects.count() == 1


def test_test_drive_resets_steps_and_tears_down(client_for, alice):
    from tests.envs.conftest import child_server_pids

    c = client_for(alice)
    add(c)
    env = Environment.objects.get(slug="my-game")
    version = env.versions.get()
    url = reverse("catalog:version-testdrive", args=[env.pk, version.pk])
    form = c.get(url)
    assert b'name="number"' in form.content  # the form is generated from the action schema
    response = c.post(url, {"tool": "guess", "number": 8, "seed": 3, "provider": "process"})
    assert response.status_code == 302  # to the same page, following the job a worker runs
    job = Job.objects.get()
    assert job.status == "queued" and response["Location"].endswith(f"job={job.pk}")
    assert c.get(response["Location"]).context["drive"] is None  # not done yet: the page shows the job
    run_job(job.pk)  # what the worker runs
    drive = c.get(response["Location"]).context["drive"]
    assert drive["reset"]["observation"]["hint"] == "start"
    assert drive["step"]["observation"]["hint"] in {"higher", "lower", "correct"}
    assert child_server_pids() == set()


def test_test_drive_form_errors_name_the_field(client_for, alice, acme_env):
    version = acme_env.versions.get()
    url = reverse("catalog:version-testdrive", args=[acme_env.pk, version.pk])
    response = client_for(alice).post(url, {"tool": "guess", "number": "seven"})
    assert response.status_code == 400
    assert "number" in response.context["form"].errors
