"""An environment server imports OpenEnv's stack without Gradio (7 s of CPU of every server start here), and still
serves OpenEnv's web interface when it is asked for."""

from __future__ import annotations

import subprocess
import sys

import httpx

from envs.builtin import builtin_get
from envs.providers import EnvSource
from tests.conftest import ROOT

PROBE = """
import sys
from envs.providers.server_stack import import_server_stack
import_server_stack()
print("gradio" in sys.modules)
from openenv.core.env_server import create_app, create_web_interface_app
print(callable(create_app), callable(create_web_interface_app), "gradio" in sys.modules)
"""


def test_the_stack_loads_without_gradio_and_the_web_interface_names_load_when_asked():
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["False", "True", "True", "True"]


def test_a_server_asked_for_the_web_interface_serves_it(process_provider):
    folder = str(builtin_get("guess-number").folder)
    for env, web_status in (({}, 404), ({"ENABLE_WEB_INTERFACE": "true"}, 200)):
        deployment = process_provider.provision(EnvSource("folder", folder, capacity=2, env=env))
        try:
            base = deployment.endpoints[0]
            assert httpx.get(f"{base}/schema", timeout=10).status_code == 200
            assert httpx.get(f"{base}/web/", timeout=30, follow_redirects=True).status_code == web_status
        finally:
            process_provider.teardown(deployment)
