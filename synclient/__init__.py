"""synclient: fast, safe mirroring of a Synapse-compatible data platform to local disk."""

from synclient import _moved
from synclient._version import __version__
from synclient.platform.rest import Platform
from synclient.results import FileResult, SyncReport, SyncResults, SyncStatus
from synclient.synapseutils_compat import sync_from_synapse, syncFromSynapse
from synclient.sync.check import CheckResults, CheckStatus, check
from synclient.sync.download_cart import download_list
from synclient.sync.options import OnError, SyncOptions
from synclient.sync.plan.dry_run import SyncPlan
from synclient.sync.runner import download_many, download_query, sync_from_platform, syncFromPlatform
from synclient.transfer.config import TransferConfig

__all__ = [
    "Platform",
    "syncFromPlatform",
    "sync_from_platform",
    "download_many",
    "download_query",
    "download_list",
    "check",
    "CheckResults",
    "CheckStatus",
    "syncFromSynapse",
    "sync_from_synapse",
    "SyncOptions",
    "OnError",
    "TransferConfig",
    "FileResult",
    "SyncReport",
    "SyncResults",
    "SyncStatus",
    "SyncPlan",
    "__version__",
]

_moved.install()
