"""Data an environment's server needs and cannot download on a worker without the internet: a word list, a corpus,
a dataset. A version carries each as an **asset**: a file or folder, content-hashed, stored once, made available
read-only to every server of the version through the variable the environment reads.

`as` names that variable. Well-known ones get what their library expects besides: `HF_HOME` (a Hugging Face cache)
also sets `HF_HUB_OFFLINE=1` and `HF_DATASETS_OFFLINE=1`, so the library never tries the network; `NLTK_DATA` is
NLTK's data folder. Any other name (`FINQA_DATA_PATH`) is set to the asset's path.

And the other way: a server that failed for want of a file says so in its own words (`FileNotFoundError: ...
'/data/words.txt'`, NLTK's `Resource words not found`); `missing_data()` reads that and names what to provide.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OFFLINE = {"HF_HOME": {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}}
MAX_ASSETS = 20
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")


@dataclass(frozen=True)
class Asset:
    """One asset of a version: its name (the file or folder name its server sees), content hash, size, whether it
    is a folder, and the variable that points at it."""

    name: str
    sha256: str
    size: int
    folder: bool
    variable: str

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "size": self.size, "folder": self.folder,
                "as": self.variable}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Asset:
        return cls(name=str(data["name"]), sha256=str(data["sha256"]), size=int(data.get("size") or 0),
                   folder=bool(data.get("folder")), variable=str(data["as"]))  # fmt: skip


def asset_hash(path: Path) -> tuple[str, int]:
    """The content hash and size of a file, or of a folder's files (their relative paths included)."""
    digest = hashlib.sha256()
    size = 0
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if path.is_dir():
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with file.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
                size += len(chunk)
    return digest.hexdigest(), size


def variable_for(path: Path) -> str | None:
    """The variable a well-known data folder is read through (NLTK's data folder, a Hugging Face cache); None when
    only the environment knows."""
    if path.is_dir() and (
        path.name == "nltk_data" or any((path / kind).is_dir() for kind in ("corpora", "tokenizers"))
    ):
        return "NLTK_DATA"
    if path.is_dir() and ((path / "hub").is_dir() or path.name == "huggingface"):
        return "HF_HOME"
    return None


def asset_variables(assets: list[Asset], location: dict[str, Path]) -> dict[str, str]:
    """The server's variables for its assets (`location`: each asset's sha256 → where it lies on this host)."""
    variables: dict[str, str] = {}
    for asset in assets:
        variables[asset.variable] = str(location[asset.sha256])
        variables.update(OFFLINE.get(asset.variable, {}))
    return variables


FILE_NOT_FOUND = re.compile(r"(?:FileNotFoundError|No such file or directory)[^'\"]*['\"]([^'\"]+)['\"]")
NLTK_RESOURCE = re.compile(r"Resource\s+\S*?(\w+)\S*\s+not\s+found", re.S)
HUB_OFFLINE = re.compile(r"(?:LocalEntryNotFoundError|OfflineModeIsEnabled|couldn't connect to '?https://huggingface"
                         r"\.co)", re.I)  # fmt: skip


GIVE_LATER = "`manage.py env asset add SLUG PATH --as VARIABLE`"
GIVE_WITH_ADD = "`manage.py env add … --asset PATH=VARIABLE`"


def missing_data(text: str, *, give: str = GIVE_LATER) -> str | None:
    """What a server said it lacked, as a sentence that names it and how to provide it (`give`: the command that
    gives a file: to a version that exists, or with the add); None if it said nothing of the kind."""
    if match := NLTK_RESOURCE.search(text):
        return (f"the server needs NLTK's `{match.group(1)}` data, which it could not download: provide an nltk_data "
                f"folder that holds it (made once with `python -m nltk.downloader -d nltk_data {match.group(1)}` where "
                f"there is a network) as an asset with `--as NLTK_DATA`")  # fmt: skip
    if match := FILE_NOT_FOUND.search(text):
        path = match.group(1)
        return (f"the server needs the file or folder {path}, which is missing: provide it as an asset ({give}, "
                f"where VARIABLE is the setting the environment reads for it)")  # fmt: skip
    if HUB_OFFLINE.search(text):
        return (
            "the server needs files from the Hugging Face Hub, which it cannot reach: provide a Hugging Face "
            "cache folder that holds them as an asset with `--as HF_HOME` (the Hub is then never tried)"
        )
    return None
