"""Environments from git repositories: a URL, a ref and a sub-folder, pinned to a commit.

OpenEnv keeps each environment in `envs/<name>` of its repository, and Hugging Face Spaces are git repositories.
A version pins the commit the ref pointed at; a worker materialises exactly that commit's sub-folder (cached per
commit), so a branch that moves on never changes a version. Any URL the machine's `git` reaches works, `file://`
included.
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

GIT_TIMEOUT = 600.0


class GitSourceError(Exception):
    """The repository, ref or sub-folder could not be had; the message says which."""


def _git(*args: str, cwd: Path | None = None, timeout: float = GIT_TIMEOUT) -> str:
    try:
        result = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
            env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": tempfile.gettempdir()},
        )  # fmt: skip
    except FileNotFoundError as exc:
        raise GitSourceError("git is not installed on this machine") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitSourceError(f"git {args[0]} took longer than {timeout:g} s") from exc
    if result.returncode != 0:
        message = " ".join(result.stderr.strip().splitlines()[-3:]) or f"git {args[0]} failed"
        raise GitSourceError(message)
    return result.stdout.strip()


def _mirror(url: str, cache_dir: Path) -> Path:
    mirror = Path(cache_dir) / "repos" / hashlib.sha256(url.encode()).hexdigest()[:16]
    if not (mirror / "HEAD").exists():
        mirror.parent.mkdir(parents=True, exist_ok=True)
        _git("init", "--quiet", "--bare", str(mirror))
    return mirror


def _locked(cache_dir: Path, url: str):
    lock_path = Path(cache_dir) / f".{hashlib.sha256(url.encode()).hexdigest()[:16]}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(lock_path, "w")  # noqa: SIM115 - released by the caller's with-block
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _fetch(mirror: Path, url: str) -> None:
    _git("fetch", "--quiet", "--force", "--tags", url, "+refs/heads/*:refs/remotes/origin/*", cwd=mirror)
    try:
        _git("fetch", "--quiet", "--force", url, "+HEAD:refs/remotes/origin/HEAD", cwd=mirror)
    except GitSourceError:
        pass  # a repository without a HEAD branch still has its branches and tags


def git_resolve(url: str, ref: str, *, cache_dir: Path) -> str:
    """The commit `ref` (a branch, tag or commit; empty: the default branch) points at now."""
    ref = ref.strip() or "HEAD"
    if ref.startswith("-"):
        raise GitSourceError(f"{ref!r} is not a ref")
    with _locked(cache_dir, url):
        mirror = _mirror(url, cache_dir)
        _fetch(mirror, url)
        for candidate in (f"refs/remotes/origin/{ref}", f"refs/tags/{ref}", ref):
            try:
                return _git("rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}", cwd=mirror)
            except GitSourceError:
                continue
    raise GitSourceError(f"{url} has no branch, tag or commit {ref!r}")


def package_name(url: str, subdir: str) -> str:
    """The folder's Python package name: the sub-folder's last part, else the repository's name."""
    base = Path(subdir.strip("/")).name if subdir.strip("/") else Path(url.rstrip("/")).name.removesuffix(".git")
    name = re.sub(r"\W", "_", base) or "environment"
    return name if not name[0].isdigit() else f"env_{name}"


def git_checkout(url: str, commit: str, subdir: str, *, cache_dir: Path) -> Path:
    """The environment folder at `commit` (fetched again if this machine has not seen it), cached per commit."""
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise GitSourceError(f"{commit!r} is not a full commit id")
    subdir = subdir.strip("/")
    if ".." in Path(subdir).parts:
        raise GitSourceError(f"the sub-folder {subdir!r} leaves the repository")
    name = package_name(url, subdir)
    tree_root = Path(cache_dir) / "trees" / f"{commit[:16]}-{hashlib.sha256(subdir.encode()).hexdigest()[:8]}"
    folder = tree_root / name
    if (tree_root / ".ready").exists():
        return folder
    with _locked(cache_dir, url):
        if (tree_root / ".ready").exists():
            return folder
        mirror = _mirror(url, cache_dir)
        try:
            _git("cat-file", "-e", f"{commit}^{{commit}}", cwd=mirror)
        except GitSourceError:
            _fetch(mirror, url)
        tree = f"{commit}:{subdir}" if subdir else commit
        try:
            kind = _git("cat-file", "-t", tree, cwd=mirror)
        except GitSourceError:
            kind = ""
        if kind != "tree":
            raise GitSourceError(f"commit {commit[:12]} of {url} has no folder {subdir!r}")
        partial = tree_root.with_name(tree_root.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        archive = subprocess.Popen(["git", "archive", "--format=tar", f"--prefix={name}/", tree], cwd=mirror,
                                   stdout=subprocess.PIPE)  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(partial)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise GitSourceError(f"git archive of {tree} failed")
        (partial / ".ready").write_text(commit + "\n")
        shutil.rmtree(tree_root, ignore_errors=True)
        partial.rename(tree_root)
    return folder


def git_repository(url: str, ref: str, *, cache_dir: Path) -> tuple[Path, str]:
    """This machine's copy of the repository (a bare mirror, fetched now) and the commit `ref` points at: what a
    catalog of the repository's environments is read from (openenv.discovery reads a git tree, never a checkout)."""
    commit = git_resolve(url, ref, cache_dir=cache_dir)
    return _mirror(url, cache_dir), commit


def git_tree_id(url: str, commit: str, subdir: str, *, cache_dir: Path) -> str:
    """The id of a folder's tree at a commit: equal ids mean the same files, whatever else the commit changed."""
    try:
        return _git("rev-parse", "--verify", "--quiet", f"{commit}:{subdir.strip('/')}", cwd=_mirror(url, cache_dir))
    except GitSourceError:
        return ""
