"""A base image made here, for machines that cannot pull `python:3.11-slim` from a registry.

Debian's mirror is reachable where registries are not: `debootstrap` a minimal bookworm (its python3 is 3.11)
and `docker import` it. Environment Dockerfiles only need `python3 -m venv` and pip, which this image has.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

LOCAL_BASE_TAG = "trainyard/base:bookworm-py311-v3"
PACKAGES = "python3,python3-venv,python3-pip,ca-certificates"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def local_base_image(client, *, work_dir: Path | None = None, progress=print) -> str:
    """Return the tag of the locally made base image, building it once (about two minutes) if missing. Processes that
    ask at once (CI makes it ahead of the tests, while a test may already want it) build it once: under a lock."""
    import fcntl

    if _has_base_image(client):
        return LOCAL_BASE_TAG
    with open(Path(tempfile.gettempdir()) / ".trainyard-base-image.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _has_base_image(client):
            return LOCAL_BASE_TAG
        return _make_base_image(work_dir, progress)


def _has_base_image(client) -> bool:
    import docker.errors

    try:
        client.images.get(LOCAL_BASE_TAG)
        return True
    except docker.errors.ImageNotFound:
        return False


def _make_base_image(work_dir: Path | None, progress) -> str:
    if shutil.which("debootstrap") is None:
        raise RuntimeError("debootstrap is needed to make a base image here: apt-get install debootstrap")
    work_dir = Path(work_dir or tempfile.gettempdir())
    work_dir.mkdir(parents=True, exist_ok=True)
    rootfs = Path(tempfile.mkdtemp(prefix="trainyard-rootfs-", dir=work_dir))
    try:
        progress(f"making base image {LOCAL_BASE_TAG} with debootstrap (about two minutes, once per machine)")
        subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={PACKAGES}", "bookworm", str(rootfs)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        rootfs.chmod(0o755)  # mkdtemp made it 0700: "/" must be traversable by the image's non-root user
        # pip inside builds verifies the registry with the machine's own CA bundle (it may hold a proxy's CA).
        if CA_BUNDLE.exists():
            target = rootfs / "etc/ssl/certs/ca-certificates.crt"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(CA_BUNDLE, target)
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(rootfs / cache, ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        env = dict(os.environ)
        subprocess.run(
            ["docker", "import",
             "--change", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
             "--change", "ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt",
             "--change", "ENV LANG=C.UTF-8", "--change", 'CMD ["/bin/sh"]', "-", LOCAL_BASE_TAG],
            stdin=tar.stdout, check=True, env=env, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        tar.wait()
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
    return LOCAL_BASE_TAG


if __name__ == "__main__":  # `python -m envs.providers.base_image`: make it ahead of need (CI does, beside its set-up)
    import docker

    print(local_base_image(docker.from_env()))
