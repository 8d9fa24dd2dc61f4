"""A full disk for the small files :class:`synclient.portable.ReplacingWriter` writes (manifests, synapseclient's
cache map, the gate's state): a fake writer raising ``ENOSPC`` as write(2) does."""

from __future__ import annotations

import errno
import io

from synclient import portable


class _FullDisk(io.FileIO):
    """A file on a full disk: every write fails as write(2) does with ENOSPC; what a buffer held stays held, so
    closing it fails too (as on a real full disk)."""

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")


def full_disk(monkeypatch):
    """ReplacingWriter's new files land on a full disk (a fake writer raising OSError)."""

    def open_on_a_full_disk(descriptor, mode, *, encoding, errors, newline):
        raw = _FullDisk(descriptor, "w")
        return io.TextIOWrapper(io.BufferedWriter(raw), encoding=encoding, errors=errors, newline=newline)

    monkeypatch.setattr(portable, "open", open_on_a_full_disk, raising=False)
