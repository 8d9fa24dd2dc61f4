"""Kept for ``from synclient.sync.results import ...``: the outcome types live in :mod:`synclient.results`."""
from synclient.results import FileResult, SyncReport, SyncResults, SyncStatus

__all__ = ["FileResult", "SyncReport", "SyncResults", "SyncStatus"]
