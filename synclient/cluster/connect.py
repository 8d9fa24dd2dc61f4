"""The command line's ``--dask``: a Dask client for a running scheduler, or a cluster of worker processes here.

``local:N`` starts a ``distributed.LocalCluster`` of N worker processes (one thread each: a shard runs its own
pool of threads) for the run and stops it afterwards; an address (``tcp://host:8786``, ``tls://...``) or a
scheduler file (what ``dask scheduler --scheduler-file`` and dask-jobqueue write) connects to a running one.
"""
from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

from synclient.errors import ConfigError

#: how long connecting to a running scheduler may take before the run stops with one line
CONNECT_TIMEOUT = "20s"
_LOCAL = re.compile(r"local:(\d+)")


def import_distributed() -> Any:
    """The ``distributed`` package, or one line saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ConfigError("--dask needs Dask: pip install 'synclient[dask]'") from None
    return distributed


def local_workers(spec: str) -> Optional[int]:
    """The N of ``local:N`` (None: ``spec`` names a running scheduler); checked, as Dask's presence is, before the
    run makes any call."""
    import_distributed()
    local = _LOCAL.fullmatch(spec.strip())
    if local is None:
        if spec.strip().startswith("local"):
            raise ConfigError(f"--dask {spec}: write local:N for N worker processes on this machine (local:2)")
        return None
    workers = int(local.group(1))
    if workers < 1:
        raise ConfigError(f"--dask {spec}: give at least one worker process (local:2)")
    return workers


@contextlib.contextmanager
def dask_client(spec: str) -> Iterator[Any]:
    """A ``distributed.Client`` for ``spec`` (``local:N``, a scheduler address or a scheduler file), closed after."""
    workers = local_workers(spec)
    distributed = import_distributed()
    if workers is not None:
        import dask
        # Dask's sampling profiler reads every thread's frame every 10 ms; before Python 3.12 that can deadlock a
        # worker whose many threads allocate (CPython gh-116969), and a shard runs dozens of threads
        with dask.config.set({"distributed.worker.profile.enabled": sys.version_info >= (3, 12)}), \
                distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                         dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
            yield client
        return
    where = {"scheduler_file": spec} if Path(spec).is_file() else {"address": spec}
    try:
        client = distributed.Client(**where, timeout=CONNECT_TIMEOUT)
    except (OSError, ValueError, TypeError) as exc:  # unreachable, timed out, an address Dask cannot parse
        raise ConfigError(f"--dask {spec}: cannot reach the Dask scheduler: {exc}") from None
    with client:
        yield client
