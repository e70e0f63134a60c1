"""An environment's own Python dependencies, installed into a virtual environment per requirement set.

OpenEnv environments declare what they need in `pyproject.toml` (`[project].dependencies`) or `requirements.txt`
(`open_spiel`, `textarena`, `nltk`, ...). Trainyard installs that set, less any `openenv`/`openenv-core` pin (the
`openenv` of this installation is always the one used: the two names install the same files), into a virtual
environment keyed by a hash of the set, so each set is installed once per machine and versions never share one.

The virtual environment sees this installation's packages through a `.pth` line placed after its own
site-packages: the server imports `openenv`, `uvicorn` and Trainyard's `envs.providers.serve` from here, and its own
packages from the virtual environment. Requirements this installation already satisfies are not installed again,
and everything else is resolved with this installation's versions as constraints, so a shared package (pydantic,
fastapi) is never installed twice at two versions.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import site
import subprocess
import sys
import tomllib
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

OWN_PACKAGES = {"openenv", "openenv-core"}


class DependencyError(Exception):
    """The declared dependencies could not be read or installed; the message says which and why."""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared_requirements(folder: Path) -> list[str]:
    """The folder's declared requirements, in order, without our own `openenv` and without blank lines."""
    folder = Path(folder)
    raw: list[str] = []
    pyproject = folder / "pyproject.toml"
    if pyproject.exists():
        try:
            data = tomllib.loads(pyproject.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise DependencyError(f"{pyproject} is not valid TOML: {exc}") from exc
        raw = [str(r) for r in (data.get("project") or {}).get("dependencies") or []]
    else:
        for candidate in (folder / "requirements.txt", folder / "server" / "requirements.txt"):
            if candidate.exists():
                raw = [line.split("#", 1)[0].strip() for line in candidate.read_text().splitlines()]
                break
    out = []
    for line in raw:
        if not line or line.startswith("-"):
            continue  # options (-r, -e, --index-url) are not ours to follow
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            raise DependencyError(f"the requirement {line!r} cannot be read: {exc}") from exc
        if _canonical(requirement.name) in OWN_PACKAGES:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        out.append(line)
    return out


def missing_requirements(requirements: list[str]) -> list[str]:
    """The requirements this installation does not already satisfy."""
    missing = []
    for line in requirements:
        requirement = Requirement(line)
        try:
            installed = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            missing.append(line)
            continue
        if requirement.specifier and not requirement.specifier.contains(installed, prereleases=True):
            missing.append(line)
    return missing


def requirements_hash(requirements: list[str]) -> str:
    """The key of an environment of its own: its requirements, and the installation it leans on (our interpreter and
    site-packages, which its `.pth` names): a cache folder shared by several checkouts never hands one checkout
    another's environment."""
    body = json.dumps({"requirements": sorted(requirements), "python": sys.version_info[:2],
                       "interpreter": sys.executable, "ours": _our_site_packages()})  # fmt: skip
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def _installer() -> list[str]:
    """uv when it is here (seconds), else pip."""
    scripts = Path(sys.executable).parent
    uv = shutil.which("uv", path=str(scripts)) or shutil.which("uv")
    return [uv] if uv else []


def _our_site_packages() -> list[str]:
    return [p for p in site.getsitepackages() if Path(p).is_dir()]


def _constraints() -> str:
    lines = []
    for dist in metadata.distributions():
        name = dist.metadata.get("Name")
        if name and _canonical(name) not in OWN_PACKAGES:
            lines.append(f"{name}=={dist.version}")
    return "\n".join(sorted(set(lines)))


def environment_python(
    requirements: list[str],
    *,
    cache_dir: Path,
    progress: Callable[[str], None] = lambda m: None,
    timeout: float = 900.0,
) -> Path | None:
    """The interpreter that runs servers needing `requirements`; None when this installation already has them all.

    Built once per requirement set under `cache_dir/<hash>` (a lock keeps two workers from building it at once);
    a failed build leaves nothing behind and raises DependencyError with the installer's last lines."""
    needed = missing_requirements(requirements)
    if not needed:
        return None
    key = requirements_hash(needed)
    target = Path(cache_dir) / key
    python = target / "bin" / "python"
    ready = target / ".trainyard-ready"
    if ready.exists():
        return python
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready.exists():
            return python
        shutil.rmtree(target, ignore_errors=True)
        progress(f"installing {', '.join(needed)} into an environment of their own ({key})")
        try:
            _build(target, needed, timeout)
        except DependencyError:
            shutil.rmtree(target, ignore_errors=True)
            raise
        (target / "requirements.txt").write_text("\n".join(needed) + "\n")
        ready.write_text("ok\n")
    return python


def _build(target: Path, needed: list[str], timeout: float = 900.0) -> None:
    uv = _installer()
    env = {**os.environ, "UV_NATIVE_TLS": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    base = sys.executable
    if uv:
        create = [*uv, "venv", "--quiet", "--python", base, str(target)]
    else:
        create = [base, "-m", "venv", "--without-pip", str(target)]
    _run(create, env, timeout, "creating the virtual environment")
    python = target / "bin" / "python"
    inner_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # Our packages come after the environment's own: its pins win for what it installs, ours serve the rest.
    Path(inner_site, "zz-trainyard.pth").write_text("\n".join(_our_site_packages()) + "\n")
    constraints = target / "constraints.txt"
    constraints.write_text(_constraints() + "\n")
    if uv:
        install = [*uv, "pip", "install", "--quiet", "--python", str(python), "-c", str(constraints), *needed]
    else:
        install = [base, "-m", "pip", "install", "--quiet", "--prefix", str(target), "-c", str(constraints), *needed]
    _run(install, env, timeout, f"installing {', '.join(needed)}")


def _run(command: list[str], env: dict[str, str], timeout: float, what: str) -> None:
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise DependencyError(f"{what} took longer than {timeout:g} s") from exc
    if result.returncode != 0:
        lines = [line for line in (result.stderr or result.stdout).strip().splitlines() if line.strip()]
        raise DependencyError(f"{what} failed: " + " | ".join(lines[-6:])[:1500])
