from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT, subprocess_env

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not Path(CHROMIUM).exists():
        if os.environ.get("TRAINYARD_E2E") == "required":
            pytest.fail("TRAINYARD_E2E=required but Debian's chromium is not installed")
        pytest.skip("no chromium here (apt-get install chromium); CI installs it and sets TRAINYARD_E2E=required")
    return CHROMIUM


@pytest.fixture(scope="session")
def daphne_server(django_db_setup, django_db_blocker):
    """Daphne serving the ASGI app on the test database and the test Redis, in its own process."""
    with django_db_blocker.unblock():
        env = subprocess_env()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_path = Path(env["TRAINYARD_DATA_DIR"]) / "test-daphne.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.asgi:application"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/login/", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail(f"daphne did not serve: {log_path.read_text()[-2000:]}")
    yield url
    proc.terminate()
    proc.wait(timeout=15)


@pytest.fixture
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium_path,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run"],
        )  # fmt: skip
        yield browser
        browser.close()


PASSWORD = "a long demo password"


def member_who_logs_in(team, username: str = "dana", role: str = "member"):
    """A member of `team` with a password, who logs in through the form (made before the browser's event loop
    starts: the ORM refuses to run inside one)."""
    from tests.factories import MembershipFactory, UserFactory

    user = UserFactory(username=username)
    user.set_password(PASSWORD)
    user.save()
    MembershipFactory(team=team, user=user, role=role)
    return user


def log_in(page, base_url: str, username: str) -> None:
    """Through the login form, as a person would; lands on the runs list."""
    page.goto(base_url + "/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(base_url + "/runs/")
