"""The artifact store, on both backends: what a worker publishes, a page or another host reads back whole."""

from __future__ import annotations

import os
import tarfile
import threading

import pytest

from webapp.artifacts.store import StoreError, store_for


def a_checkpoint(folder, *, big: int = 0):
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(os.urandom(big or 4096))
    (folder / "nested").mkdir()
    (folder / "nested" / "rng_state.pth").write_bytes(b"rng")
    (folder / "trainer_state.json").write_text('{"global_step": 2}')
    return folder


def test_a_folder_goes_up_and_comes_back_byte_for_byte(store, tmp_path):
    source = a_checkpoint(tmp_path / "checkpoint-2")
    sent = store.put_tree(source, "runs/1/checkpoints/checkpoint-2", marker="trainer_state.json")

    assert sent == sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
    assert store.listdir("runs/1/checkpoints") == ["checkpoint-2"]
    assert [name for name, _ in store.files("runs/1/checkpoints/checkpoint-2")] == [
        "model.safetensors", "nested/rng_state.pth", "trainer_state.json"]  # fmt: skip
    back = store.get_tree("runs/1/checkpoints/checkpoint-2", tmp_path / "pulled" / "checkpoint-2")
    for path in source.rglob("*"):
        if path.is_file():
            assert (back / path.relative_to(source)).read_bytes() == path.read_bytes()
    assert store.tree_size("runs/1") == sent


def test_the_marker_goes_up_last_so_a_reader_never_takes_half_a_folder_for_a_whole_one(store, tmp_path):
    source = a_checkpoint(tmp_path / "checkpoint-2")
    seen_before_marker = []
    original = store.put_file

    def watching(local, key):
        seen_before_marker.append(store.exists("runs/1/c/trainer_state.json"))
        original(local, key)

    store.put_file = watching
    store.put_tree(source, "runs/1/c", marker="trainer_state.json")
    assert seen_before_marker == [False, False, False]  # three files, the marker the third: absent until then
    assert store.exists("runs/1/c/trainer_state.json")


def test_a_growing_log_is_appended_and_read_from_any_offset(store, tmp_path):
    log = tmp_path / "trainer.log"
    log.write_text("step 1\n")
    known = store.append_file(log, "runs/1/trainer.log", 0)
    with log.open("a") as out:
        out.write("step 2\n")
    known = store.append_file(log, "runs/1/trainer.log", known)

    assert known == store.size("runs/1/trainer.log") == len("step 1\nstep 2\n")
    assert store.read_text("runs/1/trainer.log") == "step 1\nstep 2\n"
    assert store.read_bytes("runs/1/trainer.log", start=7) == b"step 2\n"
    assert store.size("runs/1/nothing.log") is None
    assert store.read_text("runs/1/nothing.log", default="") == ""


def test_large_files_go_up_in_parts_and_come_down_streamed(store, tmp_path):
    big = tmp_path / "weights.bin"
    big.write_bytes(os.urandom(12 * 1024 * 1024))  # above s3fs's 5 MiB part size: a multipart upload
    store.put_file(big, "models/m/weights.bin")
    pieces = list(store.chunks("models/m/weights.bin"))
    assert len(pieces) > 1 and b"".join(pieces) == big.read_bytes()


def test_delete_removes_a_whole_folder_and_check_says_the_store_works(store, tmp_path):
    store.put_tree(a_checkpoint(tmp_path / "c"), "runs/9/final")
    store.delete("runs/9/final")
    assert store.files("runs/9/final") == [] and store.listdir("runs/9") == []
    store.delete("runs/9/never-there")  # absent: nothing happens
    assert store.check() == ""


@pytest.mark.parametrize("key", ["../escape", "runs/../../etc/passwd", "", "/"])
def test_a_key_that_climbs_out_of_the_store_is_refused(store, key):
    with pytest.raises(StoreError):
        store.exists(key)


def test_a_store_that_cannot_be_reached_says_so_instead_of_passing(tmp_path, monkeypatch):
    blocked = tmp_path / "read-only"
    blocked.write_text("a file where the store's folder should be")
    assert "cannot be written" in store_for(blocked.as_uri()).check()

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    verdict = store_for("s3://nowhere/prefix").check()
    assert "cannot be written" in verdict

    with pytest.raises(StoreError, match="TRAINYARD_ARTIFACTS"):
        store_for("ftp://example.org/x")


def test_two_hosts_publishing_the_same_model_at_once_leave_it_whole(store, tmp_path):
    source = a_checkpoint(tmp_path / "model", big=1 << 20)
    publish = dict(target=store.put_tree, args=(source, "models/tiny"), kwargs={"marker": "trainer_state.json"})
    threads = [threading.Thread(**publish) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    back = store.get_tree("models/tiny", tmp_path / "back")
    assert (back / "model.safetensors").read_bytes() == (source / "model.safetensors").read_bytes()


def test_a_download_archive_streams_from_the_store(store, tmp_path, settings, monkeypatch):
    """The model download reads the store as it sends: a tar.gz whose members are the stored files."""
    import io

    from webapp.artifacts import model_archive
    from webapp.artifacts.saved_models import SavedModel

    store.put_tree(a_checkpoint(tmp_path / "c"), "runs/3/checkpoints/checkpoint-2", marker="trainer_state.json")
    (tmp_path / "c" / "optimizer.pt").write_bytes(b"x")
    monkeypatch.setattr(model_archive, "artifact_store", lambda: store)
    saved = SavedModel(run_id=3, name="checkpoint-2", step=2, key="runs/3/checkpoints/checkpoint-2", size_bytes=0,
                       adapter=False)  # fmt: skip
    body = b"".join(model_archive.archive_stream(saved, top="r-checkpoint-2"))
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    assert set(members) == {"r-checkpoint-2/model.safetensors", "r-checkpoint-2/trainer_state.json"}  # no rng state
    assert members["r-checkpoint-2/trainer_state.json"] == b'{"global_step": 2}'
