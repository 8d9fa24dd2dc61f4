"""One exception hierarchy for the whole package, rooted at :class:`SynclientError`.

Errors also inherit Python's own categories where one fits (``FileNotFoundError``,
``PermissionError``, ``ValueError``), so callers can catch them naturally.
"""
from __future__ import annotations


class SynclientError(Exception):
    """Root of every error synclient raises on purpose."""
