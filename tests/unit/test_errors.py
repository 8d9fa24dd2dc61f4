"""Local-disk failures read the same whichever layer met them: a full disk is "disk full" with errno ENOSPC."""

import errno
import sqlite3

import pytest

from synclient.errors import LocalIOError, SynclientError


def _real_sqlite_full() -> sqlite3.Error:
    db = sqlite3.connect(":memory:")
    db.execute("PRAGMA max_page_count = 2")
    db.execute("CREATE TABLE t (x BLOB)")
    with pytest.raises(sqlite3.Error) as info:
        for _ in range(100):
            db.execute("INSERT INTO t VALUES (zeroblob(4096))")
    db.close()
    return info.value


@pytest.mark.parametrize(
    "cause", [OSError(errno.ENOSPC, "No space left on device"), OSError(errno.EDQUOT, "Disk quota exceeded")]
)
def test_a_full_disk_or_quota_reads_disk_full_and_keeps_its_errno(cause):
    error = LocalIOError.from_exception("cannot write /t/MANIFEST.tsv", cause)
    assert str(error) == "cannot write /t/MANIFEST.tsv: disk full"
    assert error.errno == cause.errno
    assert isinstance(error, SynclientError) and isinstance(error, OSError)


def test_sqlite_database_or_disk_full_reads_disk_full_with_enospc():
    cause = _real_sqlite_full()
    assert "full" in str(cause)
    error = LocalIOError.from_exception("cannot write the index in /t/.synclient", cause)
    assert str(error) == "cannot write the index in /t/.synclient: disk full"
    assert error.errno == errno.ENOSPC


def test_other_causes_keep_their_own_reason_and_errno():
    cause = PermissionError(errno.EACCES, "Permission denied")
    denied = LocalIOError.from_exception("cannot create folder /t/a", cause)
    assert str(denied) == "cannot create folder /t/a: Permission denied" and denied.errno == errno.EACCES
    locked = LocalIOError.from_exception("cannot read the index", sqlite3.OperationalError("database is locked"))
    assert str(locked) == "cannot read the index: database is locked" and locked.errno is None


def test_every_error_states_its_nature():
    """The table docs/architecture.md gives; the runner stops on FATAL, retry loops retry RETRYABLE."""
    import inspect

    from synclient import errors
    from synclient.errors import ErrorNature as N

    expected = {
        "SynclientError": N.PER_FILE,
        "ConfigError": N.FATAL,
        "KeyringUnavailableError": N.FATAL,
        "CertificateError": N.FATAL,  # every file from that host would fail alike
        "ExternalCertificateError": N.PER_FILE,  # an external-URL file's own host: that file only
        "EndpointError": N.PER_FILE,  # a redirect on one call of a run fails that file, as it always did
        "PlatformError": N.PER_FILE,
        "AuthenticationError": N.FATAL,
        "AccessDeniedError": N.PER_FILE,
        "NotFoundError": N.PER_FILE,
        "ThrottledError": N.RETRYABLE,
        "ServerError": N.RETRYABLE,
        "PermanentServerError": N.PER_FILE,
        "MalformedAnswerError": N.RETRYABLE,
        "JobTimeoutError": N.RETRYABLE,
        "CallCancelledError": N.FATAL,
        "Cancelled": N.FATAL,
        "TransferCapReached": N.PER_FILE,  # left by --max-transfer: reported as left, never failed
        "BadRequestError": N.PER_FILE,
        "TransferError": N.RETRYABLE,
        "UrlRejectedError": N.RETRYABLE,
        "RangeNotHonouredError": N.PER_FILE,
        "IntegrityError": N.RETRYABLE,
        "UnsafePathError": N.PER_FILE,
        "UnsupportedError": N.PER_FILE,
        "TargetError": N.FATAL,
        "SyncLockedError": N.FATAL,
        "SyncError": N.PER_FILE,
        "PathConflictError": N.PER_FILE,
        "FileInTheWayError": N.PER_FILE,
        "NoRoomForFileError": N.PER_FILE,  # one file the disk has no room for: smaller ones may still fit
        "ShardFailedError": N.PER_FILE,  # a Dask shard that could not run: its files fail, the next run resumes
        "ClusterLostError": N.FATAL,  # the Dask scheduler is gone: every shard would fail alike
        "CacheLockTimeoutError": N.PER_FILE,  # only ever logged: that file is not recorded in synapseclient's cache
    }
    classes = {
        name: cls
        for name, cls in vars(errors).items()
        if inspect.isclass(cls) and issubclass(cls, errors.SynclientError)
    }
    assert set(classes) == set(expected) | {"LocalIOError"}  # a new error class must be given its nature here
    for name, nature in expected.items():
        cls = classes[name]
        instance = cls.__new__(cls)  # the nature is the class's; no constructor arguments needed
        assert instance.nature is nature, name
    local = errors.LocalIOError("cannot write x")
    assert local.nature is N.PER_FILE
    local.errno = errno.ENOSPC
    assert local.nature is N.FATAL


def test_every_error_pickles_whole():
    """A file's error comes back from the Dask worker that fetched it: class, message and attributes, whatever the
    constructor's arguments (keyword-only ones, an errno)."""
    import pickle

    from synclient import errors

    cert = errors.CertificateError("the storage host 127.0.0.1:1 is not trusted", host="127.0.0.1:1")
    disk = errors.LocalIOError.from_exception("cannot write /t/x", OSError(errno.ENOSPC, "No space left"))
    server = errors.ServerError("GET /x: 503", status=503, method="GET", url="http://h/x").spent()
    for error in (
        cert,
        disk,
        server,
        errors.ShardFailedError("worker lost"),
        errors.EndpointError("a redirect", endpoint="http://h/repo/v1"),
    ):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error) and copy.nature is error.nature
        assert copy.__dict__ == error.__dict__
    assert pickle.loads(pickle.dumps(disk)).errno == errno.ENOSPC
    assert pickle.loads(pickle.dumps(server)).retries_spent and pickle.loads(pickle.dumps(cert)).host == "127.0.0.1:1"
