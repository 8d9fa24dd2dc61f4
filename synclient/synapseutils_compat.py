"""The one-line switch from synapseutils: ``from synclient import syncFromSynapse``.

Same signature and meaning as ``synapseutils.syncFromSynapse`` of synapseclient 4.14, run by synclient's engine
(one shared pool, ranged parts, the local index), returning the same ``synapseclient.File`` objects. synapseclient is
needed here (it is the caller's ``syn``), and only here: ``pip install 'synclient[synapseclient]'``.

Each file lands under its file handle's ``fileName`` (or the name of the copy synapseclient's cache has of it), each
folder under its entity's name, as synapseclient 4.14 names them, so both put a project at the same paths
(:mod:`synclient.sync.plan.handle_names`; ``synclient get`` names files by their entities). Every name passes
synclient's name gate.

Deliberate differences (docs/synapseclient.md):

- two files of one folder whose handles share a ``fileName``: synapseclient writes both to that one path (the later
  replaces the earlier: a file is lost); here the file of the smallest id keeps it and the others get their id in
  it, ``name (syn456).ext``;

- a file that fails does not stop the others: every failure is collected and a :class:`~synclient.errors.SyncError`
  (with every result) is raised at the end, where synapseutils stops at the first;
- the returned list is in path order (synapseutils: the order of its walk);
- ``downloadFile=False`` writes nothing at all (synapseutils still writes manifests listing folders); each File's
  ``path`` is, as in synapseutils, the copy synapseclient's cache has of it, else the folder it would go into;
- ``manifest`` applies to both manifests (synapseutils 4.14 writes ``manifest.csv`` into every folder whatever it
  says);
- ``path=None``: each file is where synapseclient's cache has a copy of it, else downloaded into the cache's own
  layout (``<cache>/<handle id % 1000>/<handle id>/<file name>``) and recorded there, as synapseutils does; the
  run's index is kept in ``<cache>/.synclient``, and it costs one more bundle call per file it downloads.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from synclient.errors import ConfigError, LocalIOError, MalformedAnswerError, SyncError, SynclientError
from synclient.platform.models import EntityHeader, EntityType
from synclient.platform.rest import Platform
from synclient.results import FileResult, SyncResults, SyncStatus, typed_annotations
from synclient.synapse_cache import SynapseCache, cache_root_of
from synclient.sync.local.name_gate import RemotePath
from synclient.sync.local.paths import validate_name
from synclient.sync.options import SyncOptions
from synclient.sync.plan.dry_run import PlanEntry, SyncPlan
from synclient.sync.plan.handle_names import FileNames
from synclient.sync.runner import sync_found_files, sync_from_platform

MANIFEST_CHOICES = ("all", "root", "suppress")


def syncFromSynapse(
    syn: Any,
    entity: Any,
    path: Optional[str] = None,
    ifcollision: str = "overwrite.local",
    allFiles: Optional[list] = None,
    followLink: bool = False,
    manifest: str = "all",
    downloadFile: bool = True,
) -> list:
    """Download a project, folder or file (an id such as ``"syn123"`` / ``"syn123.4"``, or a synapseclient entity)
    to ``path``, mirroring its folders, with a ``SYNAPSE_METADATA_MANIFEST.tsv`` per folder (``manifest="all"``),
    in the root only (``"root"``) or none (``"suppress"``); without ``path``, into synapseclient's cache (no
    manifest). ``ifcollision``: ``overwrite.local`` | ``keep.local`` | ``keep.both`` for local files that differ from
    the remote ones. ``followLink``: download what links point to. ``downloadFile=False``: metadata only.

    Returns one ``synapseclient.File`` per file (``.path``, ``.id``, ``.versionNumber``, ``.annotations``, the
    entity's other fields and ``_file_handle``), appended to ``allFiles`` when given (deprecated in synapseutils,
    kept for callers that pass it). Raises :class:`~synclient.errors.SyncError` after the run when any file failed.
    """
    if manifest not in MANIFEST_CHOICES:
        raise ValueError('Value of manifest option should be one of the ("all", "root", "suppress")')
    entity_id, is_file = _root_of(entity)
    if path is None or path == "":
        files, _ = into_synapse_cache(syn, entity_id, follow_links=followLink, download=downloadFile)
    else:
        run = sync_from_platform(
            entity_id,
            Path(path).expanduser(),
            syn=syn,
            if_collision=ifcollision,
            follow_links=followLink,
            manifest="suppress" if is_file else manifest,
            entity_details=True,
            progress=False,
            dry_run=not downloadFile,
            file_names=FileNames.HANDLE,
        )
        files = plan_as_files(run, cache=_cache_of(syn)) if isinstance(run, SyncPlan) else results_as_files(run)
    if allFiles is not None:
        allFiles.extend(files)
        return allFiles
    return files


def sync_from_synapse(
    container: Any,
    *,
    path: Optional[str] = None,
    recursive: bool = True,
    download_file: bool = True,
    if_collision: str = "overwrite.local",
    follow_link: bool = False,
    include_types: Optional[List[str]] = None,
    manifest: str = "all",
    synapse_client: Any = None,
) -> Any:
    """synapseclient's models API, ``Project(id=...).sync_from_synapse(path=..., ...)``, run by synclient:
    ``synclient.sync_from_synapse(Project(id="syn1"), path="data", synapse_client=syn)``.

    Returns ``container`` with its ``files`` and ``folders`` filled as the models API fills them (each Folder
    with its own, down the tree; ``recursive=False``: the container's own files, and its folders without their
    contents). Only files and folders are synced: ``include_types`` must name ``file``; without ``folder`` no
    folder is entered. Without ``path`` the files go into synapseclient's cache. ``synapse_client``: a logged-in
    ``Synapse`` (default: the last one created, as in synapseclient). One extra call per folder fetches its full
    record, as synapseclient does.
    """
    if manifest not in MANIFEST_CHOICES:
        raise ValueError(f"Invalid manifest value: {manifest}. Must be one of: 'all', 'root', 'suppress'.")
    types = {kind.lower() for kind in include_types} if include_types is not None else {"file", "folder"}
    if "file" not in types:
        raise ConfigError("include_types must name 'file': synclient syncs files and the folders that hold them")
    import synapseclient

    syn = synapse_client or synapseclient.Synapse.get_client(synapse_client=None)
    exclude = ("*/*",) if not recursive or "folder" not in types else ()
    if path is None or path == "":
        files, found = into_synapse_cache(
            syn, str(container.id), follow_links=follow_link, download=download_file, exclude=exclude
        )
    else:
        run = sync_from_platform(
            str(container.id),
            Path(path).expanduser(),
            syn=syn,
            if_collision=if_collision,
            follow_links=follow_link,
            manifest=manifest,
            entity_details=True,
            progress=False,
            dry_run=not download_file,
            exclude=exclude,
            file_names=FileNames.HANDLE,
        )
        files = plan_as_files(run, cache=_cache_of(syn)) if isinstance(run, SyncPlan) else results_as_files(run)
        found = run.folders
    folder_ids = found if "folder" in types else {}
    with Platform.from_synapseclient(syn) as platform:
        records = {rel: platform.get_entity(entity_id).raw for rel, entity_id in folder_ids.items()}
        container.fill_from_dict(platform.get_entity(str(container.id)).raw, set_annotations=False)
    _fill_tree(container, files, records)
    return container


def _fill_tree(container: Any, files: list, records: Dict[str, dict]) -> None:
    """``container.files`` / ``.folders`` (and each folder's, down the tree) from the legacy Files and the folder
    records of a run, as the models API fills them: each file goes to the folder its ``parentId`` names."""
    from synapseclient.models import File, Folder

    by_path: Dict[str, Any] = {"": container}
    by_id: Dict[str, Any] = {str(container.id): container}
    container.files, container.folders = [], []
    for rel in sorted(records, key=lambda r: (r.count("/"), r)):  # parents before children
        parent = by_path.get(rel.rsplit("/", 1)[0] if "/" in rel else "")
        if parent is None:
            continue  # below a folder that was found but not listed
        folder = Folder().fill_from_dict(records[rel], set_annotations=False)
        folder.files, folder.folders = [], []
        parent.folders.append(folder)
        by_path[rel] = by_id[str(folder.id)] = folder
    for legacy in files:
        model = File().fill_from_dict(
            {**legacy.properties, "path": legacy.path, "_file_handle": legacy._file_handle or None},
            set_annotations=False,
        )
        model.annotations = dict(legacy.annotations)
        by_id.get(str(model.parent_id), container).files.append(model)


def _root_of(entity: Any) -> Tuple[str, bool]:
    """The id (``syn1.2`` when a version is pinned) of what to sync, and whether it is known to be a file (a
    file root gets no manifest, as in synapseutils; an id string of a file is found out by the engine's own
    first call, and gets none either: see :func:`syncFromSynapse`'s manifest handling)."""
    if isinstance(entity, str):
        return entity.strip(), False
    from synapseclient.core.utils import id_of

    try:
        entity_id = id_of(entity)
    except ValueError:
        raise ConfigError(
            f"cannot sync {type(entity).__name__}: give a Synapse id or a Project, Folder or File"
        ) from None
    concrete = _field(entity, "concreteType") or type(entity).__name__
    is_file = concrete.endswith("FileEntity") or type(entity).__name__ == "File"
    version = _field(entity, "versionNumber", "version_number") if is_file else None
    return (f"{entity_id}.{version}" if version else entity_id), is_file


def _field(entity: Any, *names: str) -> Any:
    for name in names:
        value = entity.get(name) if hasattr(entity, "get") else None
        if value is None:
            value = getattr(entity, name, None)
        if value is not None:
            return value
    return None


def legacy_file(
    *,
    path: Optional[Path],
    entity: Optional[Mapping[str, Any]],
    file_handle: Optional[Mapping[str, Any]],
    annotations: Mapping[str, List[object]],
) -> Any:
    """The ``synapseclient.File`` synapseutils returns for a file, made as synapseutils 4.14 makes it: the entity's
    and its file handle's records read into synapseclient's ``models.File``, then converted by it
    (``File._convert_into_legacy_file``), None fields left out. The legacy class is deprecated in synapseclient;
    synapseutils' callers get it all the same, so here it is synapseclient's own converter that builds it."""
    from synapseclient.models import File

    record = dict(entity or {})
    record["isLatestVersion"] = record.get("isLatestVersion", False)
    record["_file_handle"] = {name: value for name, value in (file_handle or {}).items() if value is not None}
    record["path"] = str(path) if path is not None else None
    model = File().fill_from_dict(record, set_annotations=False)
    model.annotations = annotations
    return model._convert_into_legacy_file()


def results_as_files(results: List[FileResult]) -> list:
    """Every result of a sync made with ``entity_details=True`` as ``synapseclient.File`` objects, in path order."""
    return [
        legacy_file(
            path=result.path,
            entity=result.entity or {"id": result.entity_id, "versionNumber": result.version},
            file_handle=result.file_handle,
            annotations=result.annotations,
        )
        for result in sorted(results, key=lambda r: str(r.path))
    ]


def plan_as_files(plan: SyncPlan, *, cache: Optional[SynapseCache] = None) -> list:
    """A dry run made with ``entity_details=True`` as synapseutils' ``downloadFile=False`` answer: each file with
    the path of the copy synapseclient's ``cache`` has of it, else the folder it would go into; an entity that could
    not be planned raises :class:`SyncError`."""
    if plan.failures:
        raise SyncError(plan.failures, plan.failures)
    entries: List[PlanEntry] = sorted(plan.entries, key=lambda e: e.rel_path)
    return [
        _entry_file(entry, _cached(cache, entry) or (entry.destination.parent if entry.destination else None))
        for entry in entries
    ]


def _entry_file(entry: PlanEntry, path: Optional[Path]) -> Any:
    """The ``synapseclient.File`` of a dry run's entry planned with ``entity_details``, at ``path``."""
    return legacy_file(
        path=path,
        entity=entry.entity,
        file_handle=entry.file_handle,
        annotations=typed_annotations(entry.annotations or {}),
    )


def _cached(cache: Optional[SynapseCache], entry: PlanEntry) -> Optional[Path]:
    handle = entry.file_handle or {}
    if cache is None or "id" not in handle or entry.size is None:
        return None
    return cache.lookup(handle["id"], md5=handle.get("contentMd5"), size=entry.size)


def into_synapse_cache(
    syn: Any, entity_id: str, *, follow_links: bool, download: bool, exclude: Tuple[str, ...] = ()
) -> Tuple[list, Dict[str, str]]:
    """synapseutils' ``path=None``: every file of ``entity_id`` at the copy synapseclient's cache has of its bytes,
    the others (``download``) fetched into the cache's own layout in one run and recorded there; each file handle
    once, however many entities (copies, links) share it. A collision setting does not apply: synapseclient ignores
    it for its own cache, and so does this. Returns the files and the folders found (rel path -> id)."""
    root = cache_root_of(syn)
    if root is None:
        raise ConfigError("path=None puts files into the synapseclient cache, and this Synapse object has none")
    try:
        root.mkdir(parents=True, exist_ok=True)  # synapseclient makes it when it starts; it may be gone since
    except OSError as exc:
        raise LocalIOError.from_exception(f"cannot create the synapseclient cache {root}", exc) from None
    # planned against a folder that does not exist: the cache's own folders (0-999) are not local copies of the tree
    nowhere = Path(tempfile.gettempdir()) / f"synclient-plan-{uuid.uuid4().hex}"
    plan = sync_from_platform(
        entity_id,
        nowhere,
        syn=syn,
        follow_links=follow_links,
        manifest="suppress",
        entity_details=True,
        progress=False,
        dry_run=True,
        exclude=exclude,
    )
    if plan.failures:
        raise SyncError(plan.failures, plan.failures)
    entries = sorted(plan.entries, key=lambda e: e.rel_path)
    cache, where, wanted, failed = SynapseCache(root), {}, [], []
    handle_of: Dict[Tuple[str, Optional[int]], str] = {}  # (entity id, version) of a file fetched -> its handle id
    for entry in entries:
        handle = entry.file_handle or {}
        handle_id = str(handle.get("id", ""))
        if handle_id in where:
            continue
        where[handle_id] = _cached(cache, entry)
        if where[handle_id] is not None or not download:
            continue
        name = handle.get("fileName") or (entry.entity or {}).get("name") or ""
        try:
            if not (handle_id.isascii() and handle_id.isdigit()):  # the cache's layout is made of the number
                raise MalformedAnswerError(f"{entry.entity_id}: file handle id {handle_id!r} is not a number")
            validate_name(name)  # one name: it must not make folders of its own in the cache
        except SynclientError as exc:
            failed.append(
                FileResult(
                    entry.entity_id, entry.version, None, entry.size, handle.get("contentMd5"), SyncStatus.FAILED, exc
                )
            )
            continue
        header = EntityHeader(id=entry.entity_id, name=name, type=EntityType.FILE, version_number=entry.version)
        handle_of[(entry.entity_id, entry.version)] = handle_id
        # synapseclient's layout: <root>/<id % 1000>/<id>/<name>, placed by synclient's name gate
        wanted.append((header, RemotePath(cache.cache_dir(handle_id).relative_to(root).parts + (name,))))
    if wanted:
        options = SyncOptions(if_collision="overwrite.local", progress=False, synapse_cache=root, on_error="continue")
        results = sync_found_files(wanted, root, root_id=entity_id, syn=syn, options=options)
        assert isinstance(results, SyncResults)  # (options without dry_run: a real run's results)
        for result in results:
            if result.ok:
                where[handle_of[(result.entity_id, result.version)]] = result.path
        failed += results.failures
    if failed:
        raise SyncError(failed, failed)
    files = [_entry_file(entry, where.get(str((entry.file_handle or {}).get("id", "")))) for entry in entries]
    return files, plan.folders


def _cache_of(syn: Any) -> Optional[SynapseCache]:
    """The download cache a ``Synapse`` object uses, when it exists."""
    root = cache_root_of(syn)
    return SynapseCache.if_present(root) if root is not None else None
