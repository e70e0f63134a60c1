"""Folders without a Dockerfile of their own (OpenEnv keeps its in server/, FROM its registry) get ours."""

from __future__ import annotations

from envs.builtin import builtin_get
from envs.providers.docker import RUNTIME_LAYER, generated_dockerfile


def test_the_runtime_layer_is_the_builtins_own_so_the_engine_shares_it():
    assert RUNTIME_LAYER in (builtin_get("guess-number").folder / "Dockerfile").read_text()


def test_it_installs_the_versions_requirements_and_serves_the_package_locked_down():
    text = generated_dockerfile("echo_env", ["open_spiel", "nltk>=3.9"])
    assert "RUN /opt/venv/bin/pip install --no-cache-dir open_spiel 'nltk>=3.9'\n" in text
    assert "COPY . /app/echo_env\n" in text and "USER 65532:65532" in text
    assert "echo_env.server.app:app" in text
    assert "pip install --no-cache-dir open_spiel" not in generated_dockerfile("echo_env", [])
