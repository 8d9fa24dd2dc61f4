"""One exception hierarchy for the whole package, rooted at :class:`SynclientError`, every class in this module.

Errors also inherit Python's own categories where one fits (``FileNotFoundError``,
``PermissionError``, ``ValueError``, ``OSError``), so callers can catch them naturally.

Each error says what it means for the work in hand (:class:`ErrorNature`, rclone's Retry / NoRetry / Fatal):
*retryable* (another try of the same call or transfer may succeed), *per-file* (this file or folder fails, the run
goes on) or *fatal* (every remaining file would meet it too: the run stops). Retry loops and the runner read
:attr:`SynclientError.retryable` and :attr:`SynclientError.nature` instead of deciding again at each call site.
"""

from __future__ import annotations

import enum
import errno
import sqlite3
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from synclient.redaction import redact

if TYPE_CHECKING:  # pragma: no cover
    from synclient.results import FileResult


class ErrorNature(enum.Enum):
    RETRYABLE = "retryable"  # another try may succeed: tried again, a bounded number of times
    PER_FILE = "per-file"  # this file (or folder) fails; the rest of the run goes on
    FATAL = "fatal"  # every remaining file would meet it too: the run stops


class SynclientError(Exception):
    """Root of every error synclient raises on purpose."""

    nature: ClassVar[ErrorNature] = ErrorNature.PER_FILE
    #: set on a retryable error that its own layer already tried again until its tries ran out (the platform's
    #: retries of a REST call): an outer loop must not multiply those tries
    retries_spent: bool = False

    @property
    def retryable(self) -> bool:
        """Worth another try here: retryable by nature, and no inner layer already spent the tries."""
        return self.nature is ErrorNature.RETRYABLE and not self.retries_spent

    def spent(self) -> SynclientError:
        """Mark this error as raised after its retries ran out (see :attr:`retries_spent`); returns it."""
        self.retries_spent = True
        return self

    def __str__(self) -> str:
        """The message, redacted (:func:`synclient.redaction.redact`): whoever prints or logs an error, a URL's
        credentials or signature and a token in it never show."""
        return redact(super().__str__())

    def __repr__(self) -> str:
        return redact(super().__repr__())

    def __reduce__(self) -> Tuple[Callable[..., SynclientError], Tuple[type, Tuple[Any, ...], Dict[str, Any]]]:
        """Pickled whole (its class, message and attributes), whatever its constructor takes: a file's error travels
        back from the Dask worker that fetched it (:mod:`synclient.cluster`) as it was raised there."""
        state = dict(self.__dict__)
        if isinstance(self, OSError):
            state["errno"] = self.errno
        return _rebuilt, (type(self), self.args, state)


def _rebuilt(cls: type, args: Tuple[Any, ...], state: Dict[str, Any]) -> SynclientError:
    error = cls.__new__(cls, *args)
    error.args = args
    code = state.pop("errno", None)
    error.__dict__.update(state)
    if code is not None:
        error.errno = code
    return error


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps: chained exceptions and the ``reason``/first argument urllib3 keeps them in (only
    exceptions: a ``reason`` may also be a plain string)."""
    seen: Set[int] = set()
    pending: List[object] = [exc]  # not all exceptions: a urllib3 reason may be a string
    while pending:
        current = pending.pop()
        if not isinstance(current, BaseException) or id(current) in seen or len(seen) > 20:
            continue
        seen.add(id(current))
        yield current
        pending.extend([current.__cause__, current.__context__, getattr(current, "reason", None)])
        pending.extend(current.args[:1])


def is_retryable(exc: BaseException) -> bool:
    """The one retry predicate: a synclient error that is :attr:`~SynclientError.retryable`."""
    return isinstance(exc, SynclientError) and exc.retryable


class ConfigError(SynclientError, ValueError):
    """Bad configuration or arguments (endpoint, token source, option values)."""

    nature = ErrorNature.FATAL


NO_KEYRING_HELP = (
    "no keyring backend is available on this machine (common on headless Linux and in containers), so the "
    "token cannot be stored there. Instead either set SYNCLIENT_AUTH_TOKEN=<token> in your environment, or "
    "put 'authtoken = <token>' under [default] in ~/.synapseConfig (and chmod 600 it), or install a "
    "keyring backend (for example: pip install keyrings.alt) and run 'synclient login' again"
)


class KeyringUnavailableError(ConfigError):
    """No usable keyring backend: the message explains the alternatives."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(NO_KEYRING_HELP + (f" [{detail}]" if detail else ""))


class EndpointError(ConfigError):
    """The endpoint is not a usable Synapse API: unreachable, TLS failure, a redirect, or answers that are not the
    API's JSON before it ever gave one well-formed answer. The message names the endpoint (``endpoint``)."""

    #: at first contact it stops everything anyway (nothing has started); a redirect on one later call (the
    #: endpoint is proven) fails that call's file, as any refused call does
    nature = ErrorNature.PER_FILE

    def __init__(self, message: str, *, endpoint: str) -> None:
        super().__init__(message)
        self.endpoint = endpoint


class CertificateError(ConfigError):
    """A host's TLS certificate does not chain to a trusted CA: every file from there would fail the same way, so
    the run stops with one line naming the host and how to trust its CA (``--ca-bundle``, ``REQUESTS_CA_BUNDLE``)."""

    def __init__(self, message: str, *, host: str) -> None:
        super().__init__(message)
        self.host = host


class ExternalCertificateError(CertificateError):
    """An external-URL file's host (one of the file's own choosing, not the platform's storage) has a certificate
    that is not trusted: that file fails, the others go on."""

    nature = ErrorNature.PER_FILE

    @classmethod
    def of(cls, error: CertificateError) -> ExternalCertificateError:
        return cls(str(error), host=error.host)


class PlatformError(SynclientError):
    """A control-plane (REST) call failed; carries the HTTP status and the server's ``reason``."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        reason: Optional[str] = None,
        method: Optional[str] = None,
        url: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.method = method
        self.url = url


class AuthenticationError(PlatformError, PermissionError):
    """401: the token is missing, unknown or expired (every other call would be refused too)."""

    nature = ErrorNature.FATAL


class AccessDeniedError(PlatformError, PermissionError):
    """403: the user may not read or download this entity."""


class NotFoundError(PlatformError, FileNotFoundError):
    """404: no such entity, version or file handle."""


class ThrottledError(PlatformError):
    """429: the server asks us to slow down (raised to the caller after every retry)."""

    nature = ErrorNature.RETRYABLE


class ServerError(PlatformError):
    """5xx, or a connection that failed (raised to the caller after every retry)."""

    nature = ErrorNature.RETRYABLE


class PermanentServerError(ServerError):
    """A 5xx that says the request will not work later either (501 Not Implemented, 505, ...): not tried again."""

    nature = ErrorNature.PER_FILE


class MalformedAnswerError(ServerError):
    """A 2xx answer that is not the JSON the API documents: not JSON at all, or an object lacking a required field."""


class JobTimeoutError(ServerError):
    """An asynchronous job of the platform (a query of a view still being built) did not finish within its bound."""


class CallCancelledError(SynclientError):
    """A REST call stopped (instead of waiting to retry) because the run it belongs to was cancelled."""

    nature = ErrorNature.FATAL


class Cancelled(SynclientError):
    """Raised inside a pool task when its run was cancelled (checked between chunks): the task stops, and what it
    leaves (a partial file, a journal) is for the next run."""

    nature = ErrorNature.FATAL


class TransferCapReached(SynclientError):
    """A file stopped, or not started, at the run's ``--max-transfer`` cap (:mod:`synclient.transfer.cap`): not a
    failure of the file (its partial, if any, stays for the next run), never tried again in this run."""


class BadRequestError(PlatformError, ValueError):
    """Another 4xx: the request itself was refused (never retried)."""


class TransferError(SynclientError):
    """A data-plane (storage GET) problem: cut body, bad status, stall, expired URL after refreshes."""

    nature = ErrorNature.RETRYABLE


class UrlRejectedError(TransferError):
    """Storage answered 403 (an expired or refused pre-signed URL): refresh the URL and try again."""


class RangeNotHonouredError(TransferError):
    """The storage host ignored ``Range`` or answered with the wrong ``Content-Range``: not tried again the same
    way (the file falls back to one full GET)."""

    nature = ErrorNature.PER_FILE


class IntegrityError(SynclientError, ValueError):
    """Downloaded bytes do not match the size or MD5 the platform recorded: fetched again (bounded)."""

    nature = ErrorNature.RETRYABLE


class UnsupportedError(SynclientError, ValueError):
    """Something synclient does not download: an entity kind (a table, a view) or a file whose bytes sit where it
    cannot fetch them (an ``sftp://`` or ``ftp://`` external URL). That entry fails; the others go on."""


class UnsafePathError(SynclientError, ValueError):
    """A name from the server would not stay a plain name inside the target directory."""


_DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_SQLITE_FULL = 13  # sqlite3.SQLITE_FULL: "database or disk is full"
_SQLITE_FULL_MESSAGE = "database or disk is full"  # what tells it before Python 3.11 (no sqlite_errorcode)
#: local errors every remaining file would meet too: no space, no quota, a read-only filesystem
_FATAL_ERRNOS = frozenset(_DISK_FULL_ERRNOS + (errno.EROFS,))


class LocalIOError(SynclientError, OSError):
    """Writing to the local disk failed (disk full, read-only, path is a file, ...). Fatal when the cause is the
    whole disk's (full, over quota, read-only), per file otherwise."""

    @property
    def nature(self) -> ErrorNature:  # type: ignore[override]
        return ErrorNature.FATAL if getattr(self, "errno", None) in _FATAL_ERRNOS else ErrorNature.PER_FILE

    @classmethod
    def from_exception(cls, action: str, exc: BaseException) -> LocalIOError:
        """``"<action>: <reason>"`` for an ``OSError`` or ``sqlite3.Error``, keeping its ``errno``. A full disk or
        quota reads "disk full" with errno ``ENOSPC`` whichever layer (file, manifest, SQLite index) hit it first,
        so callers and users see one answer for one cause."""
        code = getattr(exc, "errno", None)
        if code in _DISK_FULL_ERRNOS or _is_sqlite_full(exc):
            reason, code = "disk full", code if code in _DISK_FULL_ERRNOS else errno.ENOSPC
        else:
            reason = getattr(exc, "strerror", None) or str(exc)
        error = cls(f"{action}: {reason}")
        error.errno = code
        return error


def _is_sqlite_full(exc: BaseException) -> bool:
    if not isinstance(exc, sqlite3.Error):
        return False
    sqlite_code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    return sqlite_code == _SQLITE_FULL if sqlite_code is not None else str(exc) == _SQLITE_FULL_MESSAGE


class NoRoomForFileError(LocalIOError):
    """One file does not fit in the space left (its preallocation was refused, or it is larger than the free space):
    that file fails, and the run goes on (smaller files may still fit). Only a write that fails for lack of space
    is fatal (:class:`LocalIOError`)."""

    nature = ErrorNature.PER_FILE

    @classmethod
    def of(cls, path: object, size: int, exc: OSError, *, free: Optional[int] = None) -> NoRoomForFileError:
        room = f" ({free} bytes free)" if free is not None else ""
        error = cls(f"cannot write {path}: no room for its {size} bytes{room}")
        error.errno = exc.errno
        return error


class TargetError(LocalIOError):
    """The target path cannot be used: it exists as a file, or is otherwise not a directory we can sync into."""

    nature = ErrorNature.FATAL


class SyncLockedError(SynclientError, BlockingIOError):
    """Another sync is writing into the same target directory."""

    nature = ErrorNature.FATAL


class SyncError(SynclientError):
    """Some files of a sync failed, or some folder's manifest could not be written. ``failures`` lists the files;
    ``results`` holds every file's outcome (with ``.report``); ``problems`` the manifest errors, one per folder."""

    def __init__(
        self, failures: Sequence[FileResult], results: Sequence[FileResult], *, problems: Sequence[str] = ()
    ) -> None:
        self.failures: List[FileResult] = list(failures)
        self.results: List[FileResult] = list(results)
        self.problems: List[str] = list(problems)
        shown = "; ".join(f"{f.entity_id} ({f.path}): {f.error}" for f in self.failures[:5])
        more = f" and {len(self.failures) - 5} more" if len(self.failures) > 5 else ""
        text = f"{len(self.failures)} of {len(self.results)} files failed: {shown}{more}" if self.failures else ""
        if self.problems:
            text += ("; " if text else "") + "; ".join(self.problems[:5])
        super().__init__(text)


class PathConflictError(SynclientError):
    """A local file or folder is in the way of a remote entity, and the sync may not replace it: reported for that
    entity with its path (a folder where the remote has a file, a file where it has a folder, a symlink)."""

    nature = ErrorNature.PER_FILE  # also for FileInTheWayError, whatever its errno says


class FileInTheWayError(PathConflictError, LocalIOError):
    """A local file (or other non-folder) stands where a remote folder must be created."""


class ShardFailedError(SynclientError):
    """The Dask worker that was to fetch this file could not run its shard (every try of it failed, or its worker
    died more often than the scheduler allows): that shard's files fail, the next run resumes them."""


class ClusterLostError(ShardFailedError):
    """The run's Dask client lost its scheduler (or was closed) while shards were out: every shard would fail alike,
    so the run stops, once; the next run resumes what the shards left."""

    nature = ErrorNature.FATAL


class CacheLockTimeoutError(SynclientError, TimeoutError):
    """synapseclient's download cache stayed locked by someone else for longer than synapseclient itself waits
    (70 s): the file is not recorded in it, and the sync goes on."""
