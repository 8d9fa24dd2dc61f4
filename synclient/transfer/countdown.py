"""A thread-safe countdown that names exactly one caller the last (s3transfer's ``CountCallbackInvoker``)."""

from __future__ import annotations

import threading


class Countdown:
    """Counts finished pieces of work down to zero; :meth:`count_down` is true for exactly one caller, the one
    that took the count to zero, whatever order the callers run in.

    A multipart download starts it at *parts to fetch + 1*. Each part counts down once when it ends (fetched,
    failed or cancelled), and the task that starts the download holds the extra count: it submits the first
    parts, feeds the hasher the parts a resumed download already has, and only then counts down itself. So parts
    that finish while it is still at work can never reach zero and finalize a half-started download, and a
    download with no part left to fetch (every part resumed) is finalized by the starting task. Whoever reaches
    zero, a part or the starting task, finalizes the file, and nobody else does.
    """

    __slots__ = ("_remaining", "_lock")

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError(f"a countdown starts at 1 or more, not {count}")
        self._remaining = count
        self._lock = threading.Lock()

    def count_down(self) -> bool:
        """One piece of work ended: true for the one caller that took the count to zero. Counting down past zero
        is a bug (something ended twice) and raises :class:`RuntimeError`."""
        with self._lock:
            if self._remaining == 0:
                raise RuntimeError("counted down past zero")
            self._remaining -= 1
            return self._remaining == 0

    @property
    def remaining(self) -> int:
        with self._lock:
            return self._remaining

    def __repr__(self) -> str:
        return f"Countdown(remaining={self.remaining})"
