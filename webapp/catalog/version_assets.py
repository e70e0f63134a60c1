"""A version's data assets in the artifact store: added once from a path on the host that adds it (or an upload),
content-hashed, and extracted read-only on each host that starts the version's servers (envs/data_assets.py says
what an asset is and which variables point at it)."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tarfile
import tempfile
from pathlib import Path

from django.core.exceptions import ValidationError

from envs.data_assets import MAX_ASSETS, NAME, VARIABLE, Asset, asset_hash, asset_variables, variable_for
from webapp.accounts.models import Role
from webapp.accounts.selectors import membership_require
from webapp.artifacts.layout import asset_dir, asset_key
from webapp.artifacts.store import artifact_store
from webapp.catalog.models import EnvironmentVersion

MAX_ASSET_BYTES = 2 * 1024**3  # a dataset, not a model: bigger is an image's job
RESERVED = {"MAX_CONCURRENT_ENVS", "OPENENV_MAX_SESSIONS", "HOST", "PORT", "PYTHONPATH", "PATH", "HOME"}


class AssetMissing(RuntimeError):
    """An asset the version names is neither on this host nor in the store."""


def version_assets(version: EnvironmentVersion) -> list[Asset]:
    return [Asset.from_dict(a) for a in version.settings.get("assets") or []]


def _publish(path: Path, sha256: str) -> None:
    store, key = artifact_store(), asset_key(sha256)
    if store.exists(key):
        return
    with tempfile.TemporaryDirectory() as scratch:
        archive = Path(scratch) / "asset.tar.gz"
        with tarfile.open(archive, "w:gz", dereference=True) as tar:
            tar.add(path, arcname=path.name)
        store.put_file(archive, key)


def asset_prepare(path: Path, *, name: str = "", variable: str = "") -> Asset:
    """Check a file or folder on this host as a data asset, and store it by content (once)."""
    path = Path(path).expanduser()
    if not path.exists():
        raise ValidationError({"path": f"{path} does not exist on this host."})
    name = (name or path.name).strip()
    variable = (variable or "").strip() or variable_for(path) or ""
    if not NAME.fullmatch(name):
        raise ValidationError({"name": f"{name[:60]!r} is not a file name (letters, digits, . _ -)."})
    if not VARIABLE.fullmatch(variable):
        raise ValidationError({"as": f"{variable[:60]!r} is not a variable name: say which setting the environment "
                                     f"reads for it with --as (NLTK_DATA, HF_HOME, FINQA_DATA_PATH, …)."})  # fmt: skip
    if variable.upper() in RESERVED:
        raise ValidationError({"as": f"{variable} is set by Trainyard; name the environment's own setting."})
    sha256, size = asset_hash(path)
    if size > MAX_ASSET_BYTES:
        limit = MAX_ASSET_BYTES // 2**30
        raise ValidationError({"path": f"{path} holds {size / 2**30:.1f} GiB; an asset is at most {limit} GiB "
                                       f"(build larger data into an image)."})  # fmt: skip
    _publish(path, sha256)
    return Asset(name=name, sha256=sha256, size=size, folder=path.is_dir(), variable=variable)


def version_asset_add(
    *, version: EnvironmentVersion, user, path: Path, name: str = "", variable: str = ""
) -> EnvironmentVersion:
    """Give a version a data asset: the file or folder at `path` (on this host), stored by content, pointed at by
    `variable` on every server of the version. Possible until a run uses the version (then add a version)."""
    if user is not None:
        membership_require(user=user, team=version.environment.team, role=Role.MEMBER)
    if not Path(path).expanduser().exists():
        raise ValidationError({"path": f"{path} does not exist on this host."})
    if version.is_frozen:
        raise ValidationError({"path": f"{version} is used by a run: its assets are part of what it is. Add a new "
                                       f"version, then its asset."})  # fmt: skip
    asset = asset_prepare(path, name=name, variable=variable)
    assets = [a for a in version_assets(version) if a.variable != asset.variable]
    if len(assets) >= MAX_ASSETS:
        raise ValidationError({"path": f"A version has at most {MAX_ASSETS} assets."})
    version.settings = {**version.settings, "assets": [*(a.as_dict() for a in assets), asset.as_dict()]}
    version.save(update_fields=["settings"])
    return version


def _read_only(folder: Path) -> None:
    for root, dirs, files in os.walk(folder):
        for name in files:
            file = Path(root) / name
            file.chmod(stat.S_IMODE(file.stat().st_mode) & ~0o222 | 0o444)
        for name in dirs:
            (Path(root) / name).chmod(0o555)


def asset_local(asset: Asset) -> Path:
    """The asset on this host: extracted once from the store into the cache, read-only for every server."""
    target = asset_dir(asset.sha256)
    if (target / asset.name).exists():
        return target / asset.name
    store, key = artifact_store(), asset_key(asset.sha256)
    if not store.exists(key):
        raise AssetMissing(f"the asset {asset.name} ({asset.sha256[:12]}…) is not in the artifact store: add it again "
                           f"with `manage.py env asset add`")  # fmt: skip
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / asset.name).exists():
            return target / asset.name
        partial = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            with store.open(key) as handle, tarfile.open(fileobj=handle, mode="r|gz") as tar:
                tar.extractall(partial, filter="data")
            _read_only(partial)
            partial.chmod(0o555)
            shutil.rmtree(target, ignore_errors=True)
            partial.rename(target)
        finally:
            if partial.exists():
                partial.chmod(0o755)
                shutil.rmtree(partial, ignore_errors=True)
    return target / asset.name


def assets_for_server(version: EnvironmentVersion) -> tuple[dict[str, str], tuple[str, ...]]:
    """The variables and the read-only folders (mounted at the same path in a container) of a version's assets."""
    return assets_on_this_host(version_assets(version))


def assets_on_this_host(assets: list[Asset]) -> tuple[dict[str, str], tuple[str, ...]]:
    """Assets pulled to this host: the server's variables, and their folders."""
    if not assets:
        return {}, ()
    location = {a.sha256: asset_local(a) for a in assets}
    return asset_variables(assets, location), tuple(sorted({str(asset_dir(a.sha256)) for a in assets}))
