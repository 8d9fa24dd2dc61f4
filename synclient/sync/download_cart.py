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
import logging
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Union

from synclient.errors import LocalIOError, SyncError
from synclient.events import SyncObserver
from synclient.platform.rest import Platform
from synclient.results import CartInfo, FileResult, SyncResults, SyncStatus
from synclient.sync.local.local_names import FilesystemNames
from synclient.sync.options import OnError, SyncOptions
from synclient.sync.plan.dry_run import SyncPlan
from synclient.sync.plan.filters import Age
from synclient.sync.plan.planner import Action
from synclient.sync.records.index import LocalIndex
from synclient.sync.runner import ReportBaseline, RunSettings, _CallCounts, _execute, _platform_for
from synclient.sync.sources.cart import CART_MANIFEST, ERROR_COLUMN, PATH_COLUMN, Cart, CartFile, FileKey, read_cart
from synclient.transfer.config import TransferConfig

__all__ = ["download_list"]

log = logging.getLogger("synclient.sync")

#: the ``error`` of a manifest row whose item was not among the available files read (it stays in the cart)
NOT_READ = "not downloaded: not among the cart's available files when they were read (the next run takes it)"


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
    min_size: Union[int, str, None] = None,
    max_size: Union[int, str, None] = None,
    min_age: Optional[Age] = None,
    max_age: Optional[Age] = None,
    order_by: Optional[str] = None,
    dry_run: Optional[bool] = None,
    progress: Optional[bool] = None,
    synapse_cache: Union[bool, str, Path, None] = None,
    synapse_cache_link: Optional[bool] = None,
    syn: Optional[object] = None,
    filesystem_names: Union[FilesystemNames, str, None] = None,
    dask: Optional[object] = None,
    checksum: Optional[bool] = None,
    keep_paths: Optional[bool] = None,
    manifest: Optional[str] = None,
    max_transfer: Union[int, str, None] = None,
    cutoff_mode: Optional[str] = None,
) -> Union[SyncResults, SyncPlan]:
    """Download every available file of the user's download cart (the portal's Download Cart) into ``path``, each
    at the version it was added at (the current one for an item added without a version), flat, named as
    :func:`~synclient.sync.runner.download_many` names a list of files (a taken name becomes ``name (syn1).ext``).
    Writes ``path/manifest.csv`` (the cart manifest's columns plus ``path`` and ``error``, as synapseclient's
    ``get-download-list``), then removes the items whose files succeeded from the cart (``keep_cart=True``: leaves
    it as it is). Failed files stay in the cart; files that need an action on the portal first are counted in
    ``results.report.cart`` (:class:`~synclient.results.CartInfo`). ``dry_run=True`` returns the
    :class:`~synclient.sync.plan.dry_run.SyncPlan` of what would be downloaded, and writes and removes nothing.

    ``manifest="suppress"``: no ``manifest.csv``. ``keep_paths=True``: each file at its remote path instead of
    flat (its folder from the cart manifest's ``parentId``: no bundle call). The other keywords are
    :func:`~synclient.sync.runner.download_many`'s. Raises :class:`~synclient.errors.SyncError` (results attached)
    when a file failed, unless ``on_error="continue"``: after the manifest was written and the others were removed
    from the cart. Call bound (docs/cli.md, "Downloading your download cart"): no bundle or header call per
    file."""
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
        info = _settle(
            run_platform, cart, outcome, target, keep_cart=keep_cart, manifest=settings.options.wants_manifest
        )
        outcome.report.cart = info
    finally:
        if own_platform:
            run_platform.close()
    if outcome.failures and raise_on_failure:
        raise SyncError(outcome.failures, outcome)
    return outcome


def _settle(
    platform: Platform, cart: Cart, results: SyncResults, target: Path, *, keep_cart: bool, manifest: bool
) -> CartInfo:
    """After the run: the manifest (``manifest``: unless ``manifest="suppress"``), then the succeeded files' items
    out of the cart (their calls are the run's)."""
    outcome = _outcomes(cart, results)
    info = CartInfo(
        files=len(cart.files),
        needing_action=cart.files_needing_action,
        actions=[_action_label(action.kind, action.target) for action in cart.actions],
    )
    if cart.columns and manifest:
        if _manifest_taken(target):
            log.warning("%s has a remote entity named %s; the download cart's is not written", target, CART_MANIFEST)
        else:
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


def _outcomes(cart: Cart, results: Iterable[FileResult]) -> Dict[FileKey, FileResult]:
    """Each cart file's result: by its id and the version it resolved to. A file its bundle resolved was planned
    without one: it takes the one result of its id that no versioned file of the cart claims (none, or several:
    no result, and its items stay in the cart; never the result of another version of the same file)."""
    by_key: Dict[FileKey, FileResult] = {}
    claimed = {_key(file) for file in cart.files if file.header.version_number is not None}
    unclaimed: Dict[str, List[FileResult]] = {}
    for result in results:
        by_key[(result.entity_id, result.version)] = result
        if (result.entity_id, result.version) not in claimed:
            unclaimed.setdefault(result.entity_id, []).append(result)
    outcome: Dict[FileKey, FileResult] = {}
    for file in cart.files:
        key = _key(file)
        if key[1] is not None:
            if key in by_key:
                outcome[key] = by_key[key]
        elif len(unclaimed.get(key[0], ())) == 1:
            outcome[key] = unclaimed[key[0]][0]
    return outcome


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
    if kind == "EnableTwoFa":  # (Synapse's third action: an access requirement that needs two-factor authentication)
        return f"two-factor authentication for access requirement {target}"
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
        if file is None:  # the manifest job saw an item the pages did not (the cart changed between the reads)
            rows.append(dict(row, **{PATH_COLUMN: "", ERROR_COLUMN: NOT_READ}))
            continue
        rows.append(dict(row, **_path_and_error(outcome.get(_key(file)))))
        listed.add(_key(file))
    for file in cart.files:
        if _key(file) not in listed:
            result = outcome.get(_key(file))
            version = file.header.version_number or (result.version if result is not None else None)
            extra = {"ID": file.header.id, "name": file.header.name, "versionNumber": str(version or "")}
            rows.append(dict(extra, **_path_and_error(result)))  # (the version its bundle resolved: replayable)
    destination = target / CART_MANIFEST
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{CART_MANIFEST}.", suffix=".tmp", dir=target)
    except OSError as exc:
        raise LocalIOError.from_exception(f"cannot write {destination}", exc) from None
    try:
        with open(fd, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns, restval="", extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        os.replace(temp, destination)
    except BaseException as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        if isinstance(exc, OSError):  # (one clear line; nothing is removed from the cart)
            raise LocalIOError.from_exception(f"cannot write {destination}", exc) from None
        raise
    return destination


def _manifest_taken(target: Path) -> bool:
    """Whether the target's index holds a file at its top named ``manifest.csv`` (as its filesystem compares
    names): a remote entity an earlier sync put there keeps it, as a sync's own manifests leave it (no cart file
    takes that name: it is reserved)."""
    if not os.path.lexists(target / CART_MANIFEST):
        return False
    with LocalIndex(target) as index:
        names = FilesystemNames.for_target(index.meta_dir)
        return any("/" not in path for path in index.local_paths_named(CART_MANIFEST, same=names.same_name))


def _path_and_error(result: Optional[FileResult]) -> Dict[str, str]:
    if result is None:
        return {PATH_COLUMN: "", ERROR_COLUMN: "not downloaded: left out by the filters"}
    if result.status is SyncStatus.FAILED:
        return {PATH_COLUMN: "", ERROR_COLUMN: str(result.error or "failed")}
    if not _succeeded(result):  # a conflict kept: the local file there is not the cart's (it stays in the cart)
        return {
            PATH_COLUMN: "",
            ERROR_COLUMN: f"not downloaded: the local file {result.path} differs ({result.action})",
        }
    return {PATH_COLUMN: str(result.path) if result.path is not None else "", ERROR_COLUMN: ""}
