"""OpenEnv's own validator on our three built-ins, through its CLI as a user runs it.

In openenv 0.10 `--level semantic` grades the manifest and skips the checks whose graders the release does not
implement yet (and the runtime checks, which need a `validation.execution` block and an image build): the verdict
is `warn` for every package. "Passes" here means what it can mean: no check fails or errors, and the manifest passes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envs.builtin import builtin_get
from envs.trust.openenv_validator import validate_url

OPENENV = Path(sys.executable).parent / "openenv"


@pytest.mark.parametrize("slug", ["guess-number", "word-guess", "grid-catch"])
def test_openenv_validate_at_semantic_level_passes_on_each_builtin(slug):
    folder = builtin_get(slug).folder
    result = subprocess.run([str(OPENENV), "validate", str(folder), "--level", "semantic", "--json"],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    report = json.loads(result.stdout)
    statuses = {r["check_id"]: r["status"] for r in report["results"]}
    assert statuses["static.manifest"] == "pass", report["results"][0]
    assert not {"fail", "error"} & set(statuses.values()), statuses
    assert report["verdict"] in {"pass", "warn"} and result.returncode == 0
    for r in report["results"]:
        if r["status"] == "skip":  # skipped only for what the release or the manifest version cannot run
            assert any(w in r["evidence"][0] for w in ("not implemented", "unmet dependency", "execution")), r


def test_a_folder_without_a_validation_block_fails_the_validators_manifest_check(tmp_path):
    (tmp_path / "openenv.yaml").write_text("spec_version: 1\nname: bare\napp: server.app:app\n")
    result = subprocess.run([str(OPENENV), "validate", str(tmp_path), "--level", "static", "--json"],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert json.loads(result.stdout)["verdict"] == "fail"


def test_url_mode_checks_a_running_server(served):
    outcome = validate_url(served("word-guess"))
    assert outcome["verdict"] == "pass"
    assert {c["id"] for c in outcome["checks"]} >= {"health_endpoint", "schema_endpoint", "metadata_endpoint"}
    dead = validate_url("http://127.0.0.1:9", timeout=1.0)
    assert dead["verdict"] == "fail" and any(c["status"] == "fail" for c in dead["checks"])
