"""Shared fixtures: alice (owner) and bob (member) in Acme, charlie (owner) in Globex; real services."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.factories import MembershipFactory, TeamFactory, UserFactory

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    import shutil

    from django.conf import settings

    from envs.providers.server_stack import import_server_stack

    import_server_stack()  # the tests' own process imports OpenEnv's stack as its servers do: without Gradio's 7 s

    # The test database starts empty each session, so run and evaluation ids start again at 1: files an earlier
    # session left under those ids (in the test data folder and its own store) would be taken for theirs.
    data = Path(settings.DATA_DIR)
    for stale in (data / "runs", data / "evals", data / "artifacts" / "runs", data / "artifacts" / "evals"):
        shutil.rmtree(stale, ignore_errors=True)

    # Alert e-mail goes to this session's own SMTP server (the smtp_server fixture), in this process and in the
    # workers it starts: its port is chosen before any of them reads its settings.
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        os.environ["TRAINYARD_SMTP_PORT"] = str(s.getsockname()[1])
    os.environ["TRAINYARD_SMTP_HOST"] = "127.0.0.1"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", int(os.environ["TRAINYARD_SMTP_PORT"])

    if settings.REDIS_IS_EMBEDDED:
        from webapp.core.embedded_redis import ensure_running

        config.trainyard_started_redis = ensure_running(Path(settings.EMBEDDED_REDIS_SOCKET))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that need the tiny model run last within their database group (pytest-django has put the groups in
    Django's order: plain database tests, transactional ones, then those without a database).

    While the first tests of lane B run, the tiny model is still being made beside them (.ci/run, tests/lanes.sh);
    a test that needs it early waited for it doing nothing (42 s of lane B in CI), where the tests after it need
    nothing of it. Sorting is stable, and the group is judged as pytest-django judges it (this suite has no
    Django TestCase classes), so every other test keeps its place."""

    def database_group(item: pytest.Item) -> int:
        marker = item.get_closest_marker("django_db")
        fixtures = getattr(item, "fixturenames", [])
        if (marker and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences"))) or (
            "transactional_db" in fixtures or "live_server" in fixtures
        ):
            return 1
        return 0 if marker or "db" in fixtures else 2

    items.sort(key=lambda item: (database_group(item), "tiny_model" in getattr(item, "fixturenames", [])))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Tests leave no process behind: the embedded Redis this session started stops with it."""
    if getattr(config, "trainyard_started_redis", False):
        from django.conf import settings

        from webapp.core.embedded_redis import stop

        stop(Path(settings.EMBEDDED_REDIS_SOCKET))


@pytest.fixture(autouse=True)
def _no_background_trust_checks(settings):
    """Adding a version queues a trust check; tests that want one run it themselves."""
    settings.TRAINYARD_TRUST_ON_ADD = False


@pytest.fixture
def acme(db):
    return TeamFactory(name="Acme", slug="acme")


@pytest.fixture
def globex(db):
    return TeamFactory(name="Globex", slug="globex")


@pytest.fixture
def alice(acme):
    user = UserFactory(username="alice")
    MembershipFactory(team=acme, user=user, role="owner")
    return user


@pytest.fixture
def bob(acme):
    user = UserFactory(username="bob")
    MembershipFactory(team=acme, user=user, role="member")
    return user


@pytest.fixture
def charlie(globex):
    user = UserFactory(username="charlie")
    MembershipFactory(team=globex, user=user, role="owner")
    return user


@pytest.fixture
def client_for(client):
    """client_for(user) logs the test client in as that user."""

    def login(user):
        client.force_login(user)
        return client

    return login


def database_url_for_subprocess() -> str:
    """The URL of the test database as pytest-django set it up, for processes we start (worker, trainer)."""
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    host = s.get("HOST") or "127.0.0.1"
    user = s.get("USER") or ""
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{host}:{s.get('PORT') or 5432}/{s['NAME']}"


def subprocess_env(**extra: str) -> dict[str, str]:
    from django.conf import settings

    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url_for_subprocess(),
        REDIS_URL=settings.REDIS_URL,
        TRAINYARD_DATA_DIR=str(settings.DATA_DIR),
        DJANGO_SETTINGS_MODULE="webapp.settings",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def live_worker(django_db_setup, django_db_blocker):
    """A real `celery worker` process on the test database and the test Redis."""
    from webapp.celery_app import app

    with django_db_blocker.unblock():
        env = subprocess_env()
    log_path = Path(env["TRAINYARD_DATA_DIR"]) / "test-worker.log"
    hostname = f"test-worker-{os.getpid()}@localhost"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "gpu,default", "-c", "1",
             "-n", hostname, "--loglevel", "INFO", "--without-gossip", "--without-mingle"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        replies = app.control.ping(destination=[hostname], timeout=0.5)
        if replies:
            break
        if proc.poll() is not None:
            pytest.fail(f"celery worker exited: {log_path.read_text()[-3000:]}")
    else:
        proc.kill()
        pytest.fail(f"celery worker did not answer within 60 s: {log_path.read_text()[-3000:]}")
    yield proc
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def tiny_model(django_db_setup):
    """The real tiny model (built once per cache folder, a few CPU minutes the first time; published to the store)."""
    from workers.models.published import tiny_model

    return tiny_model()


def require_docker() -> None:
    """Skip without a Docker engine, except where CI says one runs (TRAINYARD_DOCKER=required): there, fail."""
    from envs.providers.docker import docker_available

    reason = docker_available()
    if reason is not None:
        if os.environ.get("TRAINYARD_DOCKER") == "required":
            pytest.fail(f"TRAINYARD_DOCKER=required but no Docker engine answers: {reason}")
        pytest.skip(f"no Docker engine here ({reason}); CI runs these with TRAINYARD_DOCKER=required")


@pytest.fixture
def guess_version(acme, alice):
    from tests.webapp.runs.conftest import register_builtin

    return register_builtin(acme, "guess-number")


@pytest.fixture
def smtp_server():
    """A real SMTP server (aiosmtpd) on the session's mail port; yields the list of messages it received."""
    from aiosmtpd.controller import Controller

    received: list = []

    class Keep:
        async def handle_DATA(self, server, session, envelope):
            received.append(envelope)
            return "250 OK"

    controller = Controller(Keep(), hostname="127.0.0.1", port=int(os.environ["TRAINYARD_SMTP_PORT"]))
    controller.start()
    yield received
    controller.stop()


@pytest.fixture
def webhook_receiver():
    """A real HTTP server that records what is POSTed to it; `.fail = N` answers 500 to the next N requests."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Receiver(ThreadingHTTPServer):
        bodies: list
        fail = 0

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.server.fail > 0:
                self.server.fail -= 1
                self.send_response(500)
            else:
                self.server.bodies.append(body)
                self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = Receiver(("127.0.0.1", 0), Handler)
    server.bodies = []
    server.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
