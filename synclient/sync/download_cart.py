"""The download cart downloaded: :func:`download_list` (``synclient get --download-list``).

The cart is read first (:mod:`synclient.sync.sources.cart`: its available files, the actions its other files need,
its manifest), then its files are one run of a list (one pool, one URL broker, one index, one report), flat in the
target. After the run:

- ``manifest.csv`` in the target, as synapseclient 4.14's ``get-download-list`` writes it: the cart manifest's
  columns plus ``path`` and ``error``, a row per available item, written whole then moved into place;
- the items whose files succeeded (downloaded and verified, or already up to date at their path) are removed from
  the cart, at most 1,000 per call, each keyed as the cart has it; failures stay in the cart.

**Removal happens once, after the run**, not per batch as it goes: only a file complete and verified at its final
path is ever removed, and a run that is killed (Ctrl-C, SIGKILL, a fatal error) removes nothing. The next run finds
the cart holding every file still there, skips those already complete (the index says so: no byte moves) and
removes them with the others. The cost of this choice is that a killed run's complete files are removed only by
the next run, never that a file leaves the cart before it is safely on disk.
"""

from __future__ import annotations

import csv
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Union

from synclient.errors import SyncError
from synclient.events import SyncObserver
from synclient.platform.rest import Platform
from synclient.results import CartInfo, FileResult, SyncResults, SyncStatus
from synclient.sync.local.local_names import FilesystemNames
from synclient.sync.options import OnError, SyncOptions
from synclient.sync.plan.dry_run import SyncPlan
from synclient.sync.plan.planner import Action
from synclient.sync.runner import ReportBaseline, RunSettings, _CallCounts, _execute, _platform_for
from synclient.sync.sources.cart import CART_MANIFEST, ERROR_COLUMN, PATH_COLUMN, Cart, CartFile, FileKey, read_cart
from synclient.transfer.config import TransferConfig

__all__ = ["download_list"]


def download_list(
    path: Union[str, Path] = ".",
    *,
    keep_cart: bool = False,
    platform: Optional[Platform] = None,
    options: Optional[SyncOptions] = None,
    config: Optional[TransferConfig] = None,
    max_workers: Optional[int] = None,
    observer: Optional[SyncObserver] = None,
    on_error: Union[OnError, str, None] = None,
    if_collision: Optional[str] = None,
    include: Optional[Iterable[str]] = None,
    exclude: Optional[Iterable[str]] = None,
    dry_run: Optional[bool] = None,
    progress: Optional[bool] = None,
    synapse_cache: Union[bool, str, Path, None] = None,
    synapse_cache_link: Optional[bool] = None,
    syn: Optional[object] = None,
    filesystem_names: Union[FilesystemNames, str, None] = None,
    dask: Optional[object] = None,
    checksum: Optional[bool] = None,
    keep_paths: Optional[bool] = None,
) -> Union[SyncResults, SyncPlan]:
    """Download every available file of the user's download cart (the portal's Download Cart) into ``path``, each
    at the version it was added at (the current one for an item added without a version), flat, named as
    :func:`~synclient.sync.runner.download_many` names a list of files (a taken name becomes ``name (syn1).ext``).
    Writes ``path/manifest.csv`` (the cart manifest's columns plus ``path`` and ``error``, as synapseclient's
    ``get-download-list``), then removes the items whose files succeeded from the cart (``keep_cart=True``: leaves
    it as it is). ``keep_paths=True``: each file lands at its remote path, ``<project name>/<folder path>/<name>``,
    as :func:`~synclient.sync.runner.download_many` places a list's files (``get --download-list --keep-paths``).
    Failed files stay in the cart; files that need an action on the portal first are counted in
    ``results.report.cart`` (:class:`~synclient.results.CartInfo`). ``dry_run=True`` returns the
    :class:`~synclient.sync.plan.dry_run.SyncPlan` of what would be downloaded, and writes and removes nothing.

    The other keywords are :func:`~synclient.sync.runner.download_many`'s. Raises
    :class:`~synclient.errors.SyncError` (results attached) when a file failed, unless ``on_error="continue"``:
    after the manifest was written and the others were removed from the cart. Call bound (docs/cli.md,
    "Downloading your download cart"): no bundle or header call per file."""
    settings = RunSettings.of(
        options, keywords=locals(), config=config, max_workers=max_workers, observer=observer, dask=dask
    )
    raise_on_failure = settings.options.on_error is OnError.RAISE  # (raised once the cart is settled)
    target = Path(path)
    run_platform, own_platform, run_options = _platform_for(platform, syn, settings.options, settings.config)
    run_settings = replace(settings, options=run_options.replace(on_error=OnError.CONTINUE))
    try:
        baseline = ReportBaseline.start(run_platform)
        cart = read_cart(run_platform)
        outcome = _execute(
            cart.source(),
            path=target,
            platform=run_platform,
            own_platform=False,
            settings=run_settings,
            baseline=baseline,
        )
        if isinstance(outcome, SyncPlan):  # a dry run: nothing written, nothing removed
            return outcome
        info = _settle(run_platform, cart, outcome, target, keep_cart=keep_cart)
        outcome.report.cart = info
    finally:
        if own_platform:
            run_platform.close()
    if outcome.failures and raise_on_failure:
        raise SyncError(outcome.failures, outcome)
    return outcome


def _settle(platform: Platform, cart: Cart, results: SyncResults, target: Path, *, keep_cart: bool) -> CartInfo:
    """After the run: the manifest, then the succeeded files' items out of the cart (their calls are the run's)."""
    outcome = _outcomes(cart, results)
    info = CartInfo(
        files=len(cart.files),
        needing_action=cart.files_needing_action,
        actions=[_action_label(action.kind, action.target) for action in cart.actions],
    )
    if cart.columns:
        info.manifest = str(_write_manifest(cart, outcome, target))
    done = [
        item for file in cart.files if _succeeded(outcome.get(_key(file))) for item in file.items
    ]  # (in the cart's order)
    before = _CallCounts.of(platform)
    if not keep_cart and done:
        info.removed = platform.remove_from_download_list(done)  # (the platform's count: what it removed)
    info.kept = sum(len(file.items) for file in cart.files) - info.removed
    after = _CallCounts.of(platform)
    results.report.rest_calls += after.calls - before.calls
    results.report.retries += after.retries - before.retries
    return info


def _key(file: CartFile) -> FileKey:
    return (file.header.id, file.header.version_number)


def _outcomes(cart: Cart, results: SyncResults) -> Dict[FileKey, FileResult]:
    """Each cart file's result: by its id and the version it resolved to (a file its bundle resolved was planned
    without one: matched by its id)."""
    by_key: Dict[FileKey, FileResult] = {}
    for result in results:
        by_key[(result.entity_id, result.version)] = result
        by_key.setdefault((result.entity_id, None), result)
    return {_key(file): by_key[_key(file)] for file in cart.files if _key(file) in by_key}


def _succeeded(result: Optional[FileResult]) -> bool:
    """A file complete and verified at its final path: downloaded, or already there (the index, or its bytes
    hashed: adopt); a conflict kept (the local file is not the remote's) is not."""
    if result is None:
        return False
    if result.status is SyncStatus.DOWNLOADED:
        return True
    return result.status is SyncStatus.SKIPPED and result.action in (Action.SKIP.value, Action.ADOPT.value)


def _action_label(kind: str, target: str) -> str:
    if kind == "MeetAccessRequirement":
        return f"access requirement {target}"
    if kind == "RequestDownload":
        return f"download access to {target}"
    return f"{kind} {target}"


def _write_manifest(cart: Cart, outcome: Dict[FileKey, FileResult], target: Path) -> Path:
    """``manifest.csv``: the cart manifest's rows (one per available item, its columns) with ``path`` (where the
    file is) and ``error`` (why it failed, else empty), as synapseclient's ``get-download-list`` writes them
    (``csv.DictWriter``'s dialect); a temporary file moved into place. A file the manifest did not describe (the
    cart changed between the reads) gets a row of its id, name and version."""
    columns = list(cart.columns) + [PATH_COLUMN, ERROR_COLUMN]
    rows: List[Dict[str, str]] = []
    listed: Set[FileKey] = set()
    by_id_version = {_key(file): file for file in cart.files}
    for key, row in cart.manifest_rows:
        file = by_id_version.get(key) or by_id_version.get((key[0], None))
        result = outcome.get(_key(file)) if file is not None else None
        rows.append(dict(row, **_path_and_error(result)))
        if file is not None:
            listed.add(_key(file))
    for file in cart.files:
        if _key(file) not in listed:
            extra = {
                "ID": file.header.id,
                "name": file.header.name,
                "versionNumber": str(file.header.version_number or ""),
            }
            rows.append(dict(extra, **_path_and_error(outcome.get(_key(file)))))
    destination = target / CART_MANIFEST
    fd, temp = tempfile.mkstemp(prefix=f".{CART_MANIFEST}.", suffix=".tmp", dir=target)
    try:
        with open(fd, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns, restval="", extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        os.replace(temp, destination)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return destination


def _path_and_error(result: Optional[FileResult]) -> Dict[str, str]:
    if result is None:
        return {PATH_COLUMN: "", ERROR_COLUMN: "not downloaded: left out by --include/--exclude"}
    if result.status is SyncStatus.FAILED:
        return {PATH_COLUMN: "", ERROR_COLUMN: str(result.error or "failed")}
    return {PATH_COLUMN: str(result.path) if result.path is not None else "", ERROR_COLUMN: ""}
