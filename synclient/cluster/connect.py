"""The command line's ``--dask``: a Dask client for a running scheduler, or a cluster of worker processes here.

``local:N`` starts a ``distributed.LocalCluster`` of N worker processes (one thread each: a shard runs its own
pool of threads) for the run and stops it afterwards; an address (``tcp://host:8786``, ``tls://...``) or a
scheduler file (what ``dask scheduler --scheduler-file`` and dask-jobqueue write) connects to a running one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

from synclient.errors import ConfigError

#: how long connecting to a running scheduler may take before the run stops with one line
CONNECT_TIMEOUT = "20s"
_LOCAL = re.compile(r"local:(\d+)")
#: ``local:N`` starts at most this many worker processes per core (each runs a pool of threads: more only
#: crowds the machine, and a typo such as local:1000 must not start a thousand interpreters)
LOCAL_WORKERS_PER_CORE = 4
#: the worker processes of ``local:N`` (merged into Dask's configuration in each): no sampling profiler before
#: Python 3.12, which reads every thread's frame every 10 ms and can then deadlock a worker whose many threads
#: allocate (CPython gh-116969; a shard runs dozens of threads)
WORKER_CONFIG = {"distributed.worker.profile.enabled": sys.version_info >= (3, 12)}


def import_distributed() -> Any:
    """The ``distributed`` package, or one line saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ConfigError("--dask needs Dask: pip install 'synclient[dask]'") from None
    return distributed


def check_spec(spec: str) -> None:
    """What can be known of ``--dask`` before the run makes any call: Dask is installed, ``local:N`` is well formed,
    a scheduler file holds an address."""
    if local_workers(spec) is None and _is_file_name(spec):
        _address_in_file(spec)


def local_workers(spec: str) -> Optional[int]:
    """The N of ``local:N`` (None: ``spec`` names a running scheduler), checked; and Dask's presence."""
    import_distributed()
    local = _LOCAL.fullmatch(spec.strip())
    if local is None:
        if spec.strip().startswith("local"):
            raise ConfigError(f"--dask {spec}: write local:N for N worker processes on this machine (local:2)")
        return None
    workers, most = int(local.group(1)), LOCAL_WORKERS_PER_CORE * (os.cpu_count() or 1)
    if workers < 1:
        raise ConfigError(f"--dask {spec}: give at least one worker process (local:2)")
    if workers > most:
        raise ConfigError(
            f"--dask {spec}: at most {most} worker processes on this machine "
            f"({LOCAL_WORKERS_PER_CORE} per core); a larger cluster is a scheduler's address"
        )
    return workers


@contextlib.contextmanager
def dask_client(spec: str) -> Iterator[Any]:
    """A ``distributed.Client`` for ``spec`` (``local:N``, a scheduler address or a scheduler file), closed after."""
    workers = local_workers(spec)
    distributed = import_distributed()
    if workers is not None:
        with contextlib.ExitStack() as stack:
            try:
                cluster = stack.enter_context(
                    distributed.LocalCluster(
                        n_workers=workers,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=":0",
                        config=WORKER_CONFIG,
                    )
                )
                client = stack.enter_context(distributed.Client(cluster))
            except Exception as exc:  # noqa: BLE001 - whatever Dask raises when its processes cannot start
                reason = " ".join(f"{exc}".split()) or type(exc).__name__
                raise ConfigError(f"--dask {spec}: cannot start {workers} Dask worker processes: {reason}") from None
            yield client
        return
    address = _address_in_file(spec) if _is_file_name(spec) else spec
    try:
        client = distributed.Client(address=address, timeout=CONNECT_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - unreachable, timed out, an address Dask cannot parse (whatever Dask
        # raises for it: AssertionError, ValueError, OSError, ...): the user's input, one line
        reason = " ".join(f"{exc}".split()) or type(exc).__name__
        raise ConfigError(f"--dask {spec}: cannot reach the Dask scheduler at {address}: {reason}") from None
    with client:
        yield client


def _is_file_name(spec: str) -> bool:
    """A scheduler file (one that exists, or a name that can only be a file's), not an address."""
    return "://" not in spec and (Path(os.path.expanduser(spec)).exists() or spec.endswith(".json") or os.sep in spec)


def _address_in_file(spec: str) -> str:
    """The scheduler's address from its scheduler file (``{"address": "tcp://...", ...}``), or one line saying why
    there is none."""
    path = Path(os.path.expanduser(spec))
    try:
        address = json.loads(path.read_text(encoding="utf-8")).get("address")
    except OSError as exc:
        raise ConfigError(f"--dask {spec}: cannot read the scheduler file: {exc.strerror or exc}") from None
    except (ValueError, AttributeError):  # not JSON, or JSON but no object
        address = None
    if not isinstance(address, str) or not address:
        raise ConfigError(f'--dask {spec}: not a Dask scheduler file (no "address" in its JSON)')
    return address
