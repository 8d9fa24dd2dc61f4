"""Remote names become local paths only after validation; nothing a server says escapes the target directory."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from synclient.errors import LocalIOError, UnsafePathError
from synclient.transfer.partial import PARTIAL_SUFFIXES

NAME_MAX_BYTES = 255
RESERVED_NAME = ".synclient"  # the index folder at the target's top
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                     *(f"LPT{i}" for i in range(1, 10))}


def validate_name(name: str) -> str:
    """Return ``name`` if it is one plain path component on this OS, else raise :class:`UnsafePathError`."""
    if not isinstance(name, str) or not name:
        raise UnsafePathError("empty name")
    if name in (".", ".."):
        raise UnsafePathError(f"name {name!r} is a directory reference")
    if "\x00" in name:
        raise UnsafePathError(f"name {name!r} contains NUL")
    if "/" in name or "\\" in name:
        raise UnsafePathError(f"name {name!r} contains a path separator")
    if len(name.encode("utf-8", "surrogateescape")) > NAME_MAX_BYTES:
        raise UnsafePathError(f"name {name[:40]!r}... is longer than {NAME_MAX_BYTES} bytes")
    if os.name == "nt" and (name.split(".")[0].upper() in _WINDOWS_RESERVED or name[-1] in ". "
                            or any(c in name for c in '<>:"|?*') or any(ord(c) < 32 for c in name)):
        raise UnsafePathError(f"name {name!r} is not allowed on Windows")
    return name


class TargetDirectory:
    """The local root of a sync; hands out child paths that provably stay inside it."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.create = create
        if not create:  # dry run: nothing is written, not even the target folder
            if path.exists() and not path.is_dir():
                raise LocalIOError(f"target {path} exists and is not a directory")
            self.root = Path(os.path.realpath(path))
            return
        try:
            path.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise LocalIOError(f"target {path} exists and is not a directory") from None
        except OSError as exc:
            raise LocalIOError.from_exception(f"cannot create target {path}", exc) from None
        if not path.is_dir():
            raise LocalIOError(f"target {path} is not a directory")
        self.root = Path(os.path.realpath(path))

    def contains(self, path: Path) -> bool:
        real = os.path.realpath(path)
        return real == str(self.root) or real.startswith(str(self.root) + os.sep)

    def child(self, parent: Path, name: str) -> Path:
        """``parent / name`` for a validated ``name`` under a ``parent`` inside the target."""
        validate_name(name)
        if parent == self.root and name == RESERVED_NAME:
            raise UnsafePathError(f"{name!r} is reserved for synclient's index in the target")
        if name.endswith(PARTIAL_SUFFIXES):
            # A remote file named like another file's partial download (".a.bin.<handle>.synclient-partial") would
            # be taken for that download's bytes, then moved away onto "a.bin": the partial namespace is ours.
            raise UnsafePathError(f"name {name!r} is reserved for synclient's partial downloads")
        return parent / name

    def make_folder(self, parent: Path, name: str) -> Path:
        """Create (or reuse) a sub-folder; an existing symlink that leads outside the target is refused."""
        path = self.child(parent, name)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            if not self.create:
                return path
            try:
                os.mkdir(path)
            except FileExistsError:
                pass  # a concurrent creator won; checked below
            except OSError as exc:
                raise LocalIOError.from_exception(f"cannot create folder {path}", exc) from None
            mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode) and not self.contains(path):
            raise UnsafePathError(f"{path} is a symlink leading outside the target; not followed")
        if not os.path.isdir(path):
            raise LocalIOError(f"{path} exists and is not a folder")
        return path

    def check_file_destination(self, path: Path) -> None:
        """The folder a file lands in must still resolve inside the target (no symlinked parent out of it)."""
        if not self.contains(path.parent):
            raise UnsafePathError(f"{path.parent} resolves outside the target; not written")
