"""Data assets: a file a server needs and does not ship (tests/fixtures/envs/lucky_numbers reads LUCKY_NUMBERS_PATH,
like OpenEnv's finqa reads FINQA_DATA_PATH) is named when a test drive fails for want of it, given once, stored by
content, and reaches every server read-only, also on a host that has only the artifact store."""

from __future__ import annotations

import json
import os
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from envs.data_assets import missing_data
from webapp.artifacts.layout import asset_dir, asset_key
from webapp.artifacts.store import artifact_store
from webapp.catalog.services import environment_create, version_mark_used, version_settings_update, version_testdrive
from webapp.catalog.version_assets import assets_for_server, version_asset_add

LUCKY = Path(__file__).resolve().parents[2] / "fixtures" / "envs" / "lucky_numbers"

pytestmark = pytest.mark.django_db


@pytest.fixture
def lucky(acme):
    return environment_create(team=acme, user=None, name="lucky-numbers", source_kind="folder",
                              source_ref=str(LUCKY)).versions.get()  # fmt: skip


def test_a_missing_data_file_is_named_then_given_once_and_read_by_the_server(lucky, alice, tmp_path):
    drive = version_testdrive(version=lucky, tool="guess", arguments={"number": 3})
    assert "lucky_numbers.txt" in drive.error, drive.error
    assert "env asset add lucky-numbers PATH --as VARIABLE" in drive.error

    numbers = tmp_path / "numbers.txt"
    numbers.write_text("3\n5\n")
    out = StringIO()
    call_command("env", "asset", "add", "lucky-numbers", str(numbers), "--as", "LUCKY_NUMBERS_PATH", "--json",
                 stdout=out)  # fmt: skip
    [asset] = json.loads(out.getvalue())["assets"]
    assert (asset["name"], asset["size"], asset["as"]) == ("numbers.txt", 4, "LUCKY_NUMBERS_PATH")
    assert artifact_store().exists(asset_key(asset["sha256"]))
    lucky.refresh_from_db()

    drive = version_testdrive(version=lucky, tool="guess", arguments={"number": 3})
    assert drive.error is None and drive.step["reward"] == 1.0, drive.error
    variables, mounts = assets_for_server(lucky)
    served = Path(variables["LUCKY_NUMBERS_PATH"])
    assert served.read_text() == "3\n5\n"
    assert served.stat().st_mode & 0o222 == 0, "read-only for every server"
    assert mounts == (str(asset_dir(asset["sha256"])),)

    # A host that has only the store (a worker elsewhere) pulls it; saving other settings keeps it.
    shutil.rmtree(asset_dir(asset["sha256"]), onerror=lambda f, p, e: (os.chmod(Path(p).parent, 0o755), f(p)))
    assert Path(assets_for_server(lucky)[0]["LUCKY_NUMBERS_PATH"]).read_text() == "3\n5\n"
    version_settings_update(version=lucky, user=alice, settings={"observation_fields": ["message"]})
    assert lucky.settings["assets"][0]["sha256"] == asset["sha256"]


def test_a_bad_asset_says_what_is_wrong_and_changes_nothing(lucky, tmp_path):
    numbers = tmp_path / "numbers.txt"
    numbers.write_text("3\n")
    for kwargs, field, message in [
        ({"path": tmp_path / "nowhere.txt", "variable": "LUCKY_NUMBERS_PATH"}, "path", "does not exist"),
        ({"path": numbers, "variable": "1X"}, "as", "not a variable name"),
        ({"path": numbers, "variable": ""}, "as", "say which setting the environment reads"),
        ({"path": numbers, "variable": "PATH"}, "as", "set by Trainyard"),
        ({"path": numbers, "variable": "X", "name": "../etc"}, "name", "not a file name"),
    ]:
        with pytest.raises(ValidationError) as refused:
            version_asset_add(version=lucky, user=None, **kwargs)
        assert message in refused.value.message_dict[field][0]
    with pytest.raises(ValidationError) as typed:
        version_settings_update(
            version=lucky, user=None, settings={"assets": [{"name": "x", "sha256": "0", "as": "X"}]}
        )
    assert "added with `manage.py env asset add`" in typed.value.message_dict["assets"][0]
    version_mark_used(version=lucky)
    with pytest.raises(CommandError, match="used by a run: its assets are part of what it is"):
        call_command("env", "asset", "add", "lucky-numbers", str(numbers), "--as", "LUCKY_NUMBERS_PATH")
    lucky.refresh_from_db()
    assert "assets" not in lucky.settings


@pytest.mark.parametrize(
    ("said", "named"),
    [
        ("FileNotFoundError: [Errno 2] No such file or directory: '/data/finqa/train.json'", "/data/finqa/train.json"),
        ("LookupError: \n  Resource words not found.\n  Please use the NLTK Downloader", "NLTK's `words` data"),
        ("huggingface_hub.errors.LocalEntryNotFoundError: cannot find the requested files", "--as HF_HOME"),
    ],
)
def test_what_a_server_lacked_is_named(said, named):
    assert named in missing_data(said)


def test_well_known_data_folders_need_no_variable(lucky, tmp_path):
    nltk = tmp_path / "nltk_data" / "corpora" / "words"
    nltk.mkdir(parents=True)
    (nltk / "en").write_text("apple\n")
    version_asset_add(version=lucky, user=None, path=tmp_path / "nltk_data")
    lucky.refresh_from_db()
    [asset] = lucky.settings["assets"]
    assert (asset["as"], asset["folder"]) == ("NLTK_DATA", True)
    assert (Path(assets_for_server(lucky)[0]["NLTK_DATA"]) / "corpora" / "words" / "en").read_text() == "apple\n"


def test_a_member_uploads_a_data_file_from_the_page_and_another_team_cannot(lucky, alice, charlie, client_for):
    from django.core.files.uploadedfile import SimpleUploadedFile

    url = f"/envs/{lucky.environment.pk}/versions/{lucky.pk}/assets/"
    upload = SimpleUploadedFile("lucky.txt", b"7\n")
    assert client_for(charlie).post(url, {"file": upload, "variable": "LUCKY_NUMBERS_PATH"}).status_code == 404
    lucky.refresh_from_db()
    assert "assets" not in lucky.settings
    upload = SimpleUploadedFile("lucky.txt", b"7\n")
    client_for(alice).post(url, {"file": upload, "variable": "LUCKY_NUMBERS_PATH"})
    lucky.refresh_from_db()
    assert [(a["name"], a["as"], a["size"]) for a in lucky.settings["assets"]] == [
        ("lucky.txt", "LUCKY_NUMBERS_PATH", 2)
    ]
    page = client_for(alice).get(f"/envs/{lucky.environment.pk}/").content.decode()
    assert "<code>lucky.txt</code>" in page and "<code>LUCKY_NUMBERS_PATH</code>" in page


def test_a_server_whose_sessions_need_the_data_is_added_with_it(acme, tmp_path):
    # finqa and Wordle read their data when a session is created: no session opens without it, so the add itself
    # fails, naming the file, and succeeds with the data given at once.
    eager = {"env": {"LUCKY_NUMBERS_EAGER": "1"}}
    with pytest.raises(ValidationError) as refused:
        environment_create(team=acme, user=None, name="eager", source_kind="folder", source_ref=str(LUCKY),
                           settings=eager)  # fmt: skip
    message = refused.value.message_dict["source_ref"][0]
    assert "lucky_numbers.txt" in message and "env add … --asset PATH=VARIABLE" in message, message
    numbers = tmp_path / "numbers.txt"
    numbers.write_text("3\n")
    out = StringIO()
    call_command("env", "add", "--folder", str(LUCKY), "--name", "eager", "--env", "LUCKY_NUMBERS_EAGER=1",
                 "--asset", f"{numbers}=LUCKY_NUMBERS_PATH", "--json", stdout=out)  # fmt: skip
    version = json.loads(out.getvalue())["version"]
    assert [(a["name"], a["as"]) for a in version["settings"]["assets"]] == [("numbers.txt", "LUCKY_NUMBERS_PATH")]
    assert version["capacity_measured"] >= 1
