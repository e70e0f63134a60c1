"""The cache keeps a model until the code that built it changes, and only then: the tiny model (minutes of CPU, the
base of every warm start) survives a change to the warm start's player; a warm start does not."""

from __future__ import annotations

import json
import shutil

from workers.models import tiny
from workers.models.tiny import BUILDER_SOURCES, builder_fingerprint, model_current, record_current


def _checkout_copy(tmp_path, monkeypatch):
    """A copy of the sources the builders fingerprint, standing in for another checkout of this code."""
    for name in BUILDER_SOURCES["warmstart"]:
        source = tiny.REPO_ROOT / name
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, target)
    monkeypatch.setattr(tiny, "REPO_ROOT", tmp_path)
    return tmp_path


def test_a_change_to_the_warm_start_player_keeps_the_tiny_model_and_rebuilds_warm_starts(tmp_path, monkeypatch):
    checkout = _checkout_copy(tmp_path / "checkout", monkeypatch)
    tiny_before, warm_before = builder_fingerprint("tiny"), builder_fingerprint("warmstart")
    assert tiny_before != warm_before

    with open(checkout / "envs/actions.py", "a") as actions:
        actions.write("\nA_NEW_WAY_TO_CHOOSE_ARGUMENTS = True\n")
    assert builder_fingerprint("tiny") == tiny_before
    assert builder_fingerprint("warmstart") != warm_before

    with open(checkout / "envs/adapter.py", "a") as adapter:
        adapter.write("\n# a comment alone builds nothing again\n")
    assert builder_fingerprint("tiny") == tiny_before
    with open(checkout / "envs/adapter.py", "a") as adapter:
        adapter.write("\nSEEN_BY_THE_TRAINER = 1\n")
    assert builder_fingerprint("tiny") != tiny_before
    tiny_after = builder_fingerprint("tiny")
    models = checkout / "envs/guess_number/models.py"  # a docstring there is a tool's description: it counts
    models.write_text(models.read_text().replace('"""', '"""Reworded. ', 1))
    assert builder_fingerprint("tiny") != tiny_after


def test_a_model_folder_is_current_only_for_the_builder_and_code_it_records(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    record = folder / "trainyard-recipe.json"

    record.write_text(json.dumps({"builder": "warmstart", "fingerprint": builder_fingerprint("warmstart")}))
    assert model_current(folder)
    record.write_text(json.dumps({"builder": "tiny", "fingerprint": builder_fingerprint("warmstart")}))
    assert not model_current(folder)
    record.write_text(json.dumps({"fingerprint": builder_fingerprint("tiny")}))  # written before builders had names
    assert not model_current(folder)
    for text in ("not json", "[1, 2]", json.dumps({"builder": "someone-else", "fingerprint": "x"})):
        assert not record_current(text)
