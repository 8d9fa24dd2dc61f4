"""synclient: fast, safe mirroring of a Synapse-compatible data platform to local disk."""

__version__ = "0.1.0.dev0"

from synclient.client import Platform  # noqa: E402
from synclient.sync.results import FileResult, SyncReport, SyncResults, SyncStatus  # noqa: E402
from synclient.sync.runner import syncFromPlatform, sync_from_platform  # noqa: E402
from synclient.transfer.config import TransferConfig  # noqa: E402

__all__ = ["Platform", "syncFromPlatform", "sync_from_platform", "FileResult", "SyncReport", "SyncResults",
           "SyncStatus", "TransferConfig", "__version__"]
