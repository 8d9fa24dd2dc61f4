"""A shard on a worker (synclient/cluster/shard_run.py), called directly, without Dask or a server: what a try of a
shard takes for a file an earlier try installed (only a regular file in a plain folder, holding the handle's bytes,
changed since the driver's decision), what it does not overwrite (a file changed since the decision in any other
way), and a shard that cannot even set up."""

import errno
import hashlib
import os
import threading
from pathlib import Path

import pytest

pytest.importorskip("distributed")  # shard_run imports the budget, which needs it

from synclient.cluster.shard_run import (  # noqa: E402
    PlatformAccess,
    ShardTask,
    _changed_since_decided,
    _installed_by_earlier_try,
    _portable,
    run_shard,
)
from synclient.cluster.shards import Shard  # noqa: E402
from synclient.errors import AuthenticationError, ConfigError, ErrorNature, LocalIOError, PathConflictError  # noqa: E402
from synclient.platform.credentials import Endpoints  # noqa: E402
from synclient.platform.models import FileHandle  # noqa: E402
from synclient.transfer.config import TransferConfig  # noqa: E402
from synclient.transfer.jobs import FetchJob, LocalState  # noqa: E402
from synclient.transfer.partial import SymlinkFreeFolders  # noqa: E402

HANG_GUARD_SECONDS = 30.0  # only reached when the check blocks (a FIFO opened for reading waits for a writer)


def _file(destination: Path, data: bytes, before=None) -> FetchJob:
    handle = FileHandle("77", len(data), hashlib.md5(data).hexdigest())
    return FetchJob("syn1", 1, handle, destination, before)


def _earlier(file: FetchJob) -> bool:
    folders = SymlinkFreeFolders()
    try:
        return _installed_by_earlier_try(file, folders)
    finally:
        folders.close()


def test_a_file_an_earlier_try_installed_is_recognised_and_only_that(tmp_path):
    data = b"the remote's bytes\n" * 10
    destination = tmp_path / "f.txt"
    destination.write_bytes(data)
    assert _earlier(_file(destination, data))  # nothing there when decided, the bytes now: installed before
    assert not _earlier(_file(destination, data, before=LocalState.of(destination)))  # what the driver saw
    destination.write_bytes(b"x" * len(data))  # same size, other bytes
    assert not _earlier(_file(destination, data))


def test_a_symlink_to_the_right_bytes_is_not_an_installed_file(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "copy.bin"
    data = b"z" * len(str(target))  # the symlink's own size (its text) is the handle's size
    target.write_bytes(data)
    folder = tmp_path / "target"
    folder.mkdir()
    destination = folder / "f.bin"
    destination.symlink_to(target)
    assert os.lstat(destination).st_size == len(data)
    assert not _earlier(_file(destination, data))


def test_a_folder_swapped_for_a_symlink_is_not_looked_through(tmp_path):
    data = b"the remote's bytes"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_bytes(data)  # the right bytes, elsewhere
    target = tmp_path / "target"
    target.mkdir()
    (target / "d").symlink_to(outside, target_is_directory=True)  # after the driver decided target/d/f.txt
    assert not _earlier(_file(target / "d" / "f.txt", data))


def test_a_fifo_at_the_destination_is_not_read(tmp_path):
    destination = tmp_path / "f.txt"
    os.mkfifo(destination)
    answer = []
    check = threading.Thread(target=lambda: answer.append(_earlier(_file(destination, b""))), daemon=True)
    check.start()
    check.join(HANG_GUARD_SECONDS)
    assert answer == [False]


def test_a_destination_it_cannot_look_at_is_fetched_not_a_failure_of_the_shard(tmp_path):
    (tmp_path / "d").write_bytes(b"a file where the folder was")
    destination = tmp_path / "d" / "f.txt"
    assert LocalState.of(destination) is None  # NotADirectoryError: nothing that can be seen there
    assert not _earlier(_file(destination, b"data"))


def test_a_shard_that_cannot_set_up_fails_every_file_with_that_error(tmp_path):
    """A CA bundle the worker's node does not have: a fatal ConfigError for every file (the driver stops the run
    once, as a local run does), not an exception Dask would run again and the driver would see as a per-file one."""
    files = tuple(_file(tmp_path / f"f{n}", b"data") for n in range(3))
    access = PlatformAccess(Endpoints.from_root("http://127.0.0.1:1"), "t0ken", str(tmp_path / "missing-ca.pem"))
    outcome = run_shard(ShardTask(Shard(4, files), access, TransferConfig(max_workers=2)))
    assert [fetched.destination for fetched in outcome.files] == [file.destination for file in files]
    assert all(
        isinstance(fetched.error, ConfigError) and "missing-ca.pem" in str(fetched.error) for fetched in outcome.files
    )
    assert outcome.files[0].error.nature is ErrorNature.FATAL and outcome.number == 4


def test_a_file_written_or_changed_since_the_decision_is_not_overwritten(tmp_path):
    """The driver decided while the destination was absent (or held what it saw); a shard may wait long for a
    worker, and meanwhile the user wrote a file there: that file fails, untouched, and the next run decides."""
    appeared, edited, gone = tmp_path / "new.txt", tmp_path / "old.txt", tmp_path / "gone.txt"
    edited.write_bytes(b"the version the run decided to overwrite")
    gone.write_bytes(b"decided on, then deleted by the user")
    files = (
        _file(appeared, b"remote"),
        _file(edited, b"remote", before=LocalState.of(edited)),
        _file(gone, b"remote", before=LocalState.of(gone)),
    )
    appeared.write_bytes(b"the user's new file")
    edited.write_bytes(b"the user's newer edit, longer than before")
    gone.unlink()
    assert _changed_since_decided(files[2]) is None  # nothing there to lose: fetched as decided
    access = PlatformAccess(Endpoints.from_root("http://127.0.0.1:1"), "t0ken", None)
    outcome = run_shard(ShardTask(Shard(0, files[:2]), access, TransferConfig(max_workers=2)))
    assert [type(fetched.error) for fetched in outcome.files] == [PathConflictError, PathConflictError]
    assert "a file appeared there" in str(outcome.files[0].error)
    assert "the file there changed" in str(outcome.files[1].error)
    assert appeared.read_bytes() == b"the user's new file"
    assert edited.read_bytes() == b"the user's newer edit, longer than before"


def test_an_error_that_does_not_pickle_comes_back_as_itself_with_its_nature():
    """A fatal error with an attribute pickle refuses (a lock, say) must still stop the run on the driver: its
    class and message travel, the attribute does not."""
    denied = AuthenticationError("401 on POST /fileHandle/batch: the token expired", status=401)
    denied.lock = threading.Lock()
    back = _portable(denied)
    assert type(back) is AuthenticationError and str(back) == str(denied) and back.status == 401
    assert back.nature is ErrorNature.FATAL and not hasattr(back, "lock") and hasattr(denied, "lock")
    full = LocalIOError.from_exception("cannot write /t/f", OSError(errno.ENOSPC, "No space left on device"))
    full.args = (full.args[0], threading.Lock())
    back = _portable(full)
    assert type(back) is LocalIOError and back.errno == errno.ENOSPC and back.nature is ErrorNature.FATAL
