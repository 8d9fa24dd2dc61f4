"""One exception hierarchy for the whole package, rooted at :class:`SynclientError`.

Errors also inherit Python's own categories where one fits (``FileNotFoundError``,
``PermissionError``, ``ValueError``, ``OSError``), so callers can catch them naturally.
"""
from __future__ import annotations

import errno
from typing import TYPE_CHECKING, List, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from synclient.sync.results import FileResult


class SynclientError(Exception):
    """Root of every error synclient raises on purpose."""


class ConfigError(SynclientError, ValueError):
    """Bad configuration or arguments (endpoint, token source, option values)."""


class EndpointError(ConfigError):
    """The endpoint is not a usable Synapse API: unreachable, TLS failure, a redirect, or answers that are not the
    API's JSON before it ever gave one well-formed answer. The message names the endpoint (``endpoint``)."""

    def __init__(self, message: str, *, endpoint: str) -> None:
        super().__init__(message)
        self.endpoint = endpoint


class PlatformError(SynclientError):
    """A control-plane (REST) call failed; carries the HTTP status and the server's ``reason``."""

    def __init__(self, message: str, *, status: Optional[int] = None, reason: Optional[str] = None,
                 method: Optional[str] = None, url: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.method = method
        self.url = url


class AuthenticationError(PlatformError, PermissionError):
    """401: the token is missing, unknown or expired."""


class AccessDeniedError(PlatformError, PermissionError):
    """403: the user may not read or download this entity."""


class NotFoundError(PlatformError, FileNotFoundError):
    """404: no such entity, version or file handle."""


class ThrottledError(PlatformError):
    """429 after every retry: the server kept asking us to slow down."""


class ServerError(PlatformError):
    """5xx after every retry, or a connection that kept failing."""


class MalformedAnswerError(ServerError):
    """A 2xx answer that is not the JSON the API documents: not JSON at all, or an object lacking a required field."""


class CallCancelledError(SynclientError):
    """A REST call stopped (instead of waiting to retry) because the run it belongs to was cancelled."""


class BadRequestError(PlatformError, ValueError):
    """Another 4xx: the request itself was refused (never retried)."""


class TransferError(SynclientError):
    """A data-plane (storage GET) problem: cut body, bad status, stall, expired URL after refreshes."""


class RangeNotHonouredError(TransferError):
    """The storage host ignored ``Range`` or answered with the wrong ``Content-Range``."""


class IntegrityError(SynclientError, ValueError):
    """Downloaded bytes do not match the size or MD5 the platform recorded."""


class UnsafePathError(SynclientError, ValueError):
    """A name from the server would not stay a plain name inside the target directory."""


_DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_SQLITE_FULL = 13  # sqlite3.SQLITE_FULL: "database or disk is full"


class LocalIOError(SynclientError, OSError):
    """Writing to the local disk failed (disk full, read-only, path is a file, ...)."""

    @classmethod
    def from_exception(cls, action: str, exc: BaseException) -> "LocalIOError":
        """``"<action>: <reason>"`` for an ``OSError`` or ``sqlite3.Error``, keeping its ``errno``. A full disk or
        quota reads "disk full" with errno ``ENOSPC`` whichever layer (file, manifest, SQLite index) hit it first,
        so callers and users see one answer for one cause."""
        code = getattr(exc, "errno", None)
        if code in _DISK_FULL_ERRNOS or getattr(exc, "sqlite_errorcode", None) == _SQLITE_FULL:
            reason, code = "disk full", code if code in _DISK_FULL_ERRNOS else errno.ENOSPC
        else:
            reason = getattr(exc, "strerror", None) or str(exc)
        error = cls(f"{action}: {reason}")
        error.errno = code
        return error


class TargetError(LocalIOError):
    """The target path cannot be used: it exists as a file, or is otherwise not a directory we can sync into."""


class SyncError(SynclientError):
    """Some files of a sync failed, or some folder's manifest could not be written. ``failures`` lists the files;
    ``results`` holds every file's outcome (with ``.report``); ``problems`` the manifest errors, one per folder."""

    def __init__(self, failures: Sequence["FileResult"], results: Sequence["FileResult"], *,
                 problems: Sequence[str] = ()) -> None:
        self.failures: List["FileResult"] = list(failures)
        self.results: List["FileResult"] = list(results)
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


class FileInTheWayError(PathConflictError, LocalIOError):
    """A local file (or other non-folder) stands where a remote folder must be created."""
