"""A model Trainyard made is built once per deployment: a host with an empty cache pulls the tiny model (or a warm
start) from the artifact store instead of building it again, and only a copy built by the same code serves."""

from __future__ import annotations

import json

import pytest

from webapp.artifacts.layout import model_key
from webapp.artifacts.model_names import tiny_model_built, tiny_model_dir
from webapp.artifacts.store import artifact_store
from workers.models import published
from workers.models.published import MARKER, model_publish, model_pull
from workers.models.tiny import model_current

pytestmark = pytest.mark.django_db


def test_a_fresh_host_pulls_the_tiny_model_another_host_published(tiny_model, settings, tmp_path):
    settings.ARTIFACTS_URL = (tmp_path / "store").as_uri()
    assert not tiny_model_built()
    model_publish(tiny_model)  # host A built it
    assert tiny_model_built()

    settings.CACHE_DIR = tmp_path / "host-b-cache"  # host B: nothing cached
    said = []
    path = published.tiny_model(progress=lambda message, fraction: said.append(message))
    assert path == tiny_model_dir() and path.is_relative_to(tmp_path / "host-b-cache") and model_current(path)
    assert any("from the artifact store" in m for m in said)
    assert (path / "model.safetensors").read_bytes() == (tiny_model / "model.safetensors").read_bytes()


def test_a_model_built_by_other_code_in_the_store_is_not_pulled(tiny_model, settings, tmp_path):
    settings.ARTIFACTS_URL = (tmp_path / "store").as_uri()
    key = model_key(tiny_model)
    model_publish(tiny_model)
    record = json.loads(artifact_store().read_text(f"{key}/{MARKER}"))
    artifact_store().write_bytes(f"{key}/{MARKER}", json.dumps({**record, "fingerprint": "other-code"}).encode())

    settings.CACHE_DIR = tmp_path / "host-b-cache"
    assert not model_pull(tiny_model_dir())
    assert not tiny_model_dir().exists()


def test_a_host_that_has_the_model_publishes_it_once(tiny_model, settings, tmp_path):
    settings.ARTIFACTS_URL = (tmp_path / "store").as_uri()
    model_publish(tiny_model)
    assert dict(artifact_store().files(model_key(tiny_model))).keys() >= {"config.json", MARKER}
    marker = tmp_path / "store" / model_key(tiny_model) / MARKER
    written = marker.stat().st_mtime_ns
    model_publish(tiny_model)  # current there already: left alone
    assert marker.stat().st_mtime_ns == written
