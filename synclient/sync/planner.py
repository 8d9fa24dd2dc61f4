"""The planner: remote file x local state -> one action per file, decided before any byte moves."""
from __future__ import annotations

import enum
import hashlib
import os
import stat
from pathlib import Path
from typing import Optional

from synclient.models import FileHandle

_READ = 4 * 1024 * 1024


class Action(enum.Enum):
    DOWNLOAD = "download"
    SKIP = "skip"


def file_md5(path: Path) -> str:
    md5 = hashlib.md5()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_READ), b""):
            md5.update(block)
    return md5.hexdigest()


def decide(destination: Path, handle: FileHandle) -> Action:
    """Skip a file already present with the remote size and MD5; anything else (absent, different, a symlink
    or a folder in the way) is downloaded and replaces what is there."""
    try:
        info = os.lstat(destination)
    except FileNotFoundError:
        return Action.DOWNLOAD
    if not stat.S_ISREG(info.st_mode) or handle.content_size is None or info.st_size != handle.content_size:
        return Action.DOWNLOAD
    expected: Optional[str] = handle.content_md5
    if expected and file_md5(destination) == expected.lower():
        return Action.SKIP
    return Action.DOWNLOAD
