"""The one-line switch from synapseutils: ``from synclient import syncFromSynapse``.

Same signature and meaning as ``synapseutils.syncFromSynapse`` of synapseclient 4.14, run by synclient's engine
(one shared pool, ranged parts, the local index), returning the same ``synapseclient.File`` objects. synapseclient is
needed here (it is the caller's ``syn``), and only here: ``pip install 'synclient[synapseclient]'``.

Deliberate differences (docs/synapseclient.md):

- a file that fails does not stop the others: every failure is collected and a :class:`~synclient.errors.SyncError`
  (with every result) is raised at the end, where synapseutils stops at the first;
- the returned list is in path order (synapseutils: the order of its walk);
- ``downloadFile=False`` writes nothing at all (synapseutils still writes manifests listing folders); each File's
  ``path`` is the folder it would be downloaded into, as in synapseutils;
- ``manifest`` applies to both manifests (synapseutils 4.14 writes ``manifest.csv`` into every folder whatever it
  says);
- ``path=None`` (synapseclient's cache) is not taken yet: a :class:`ConfigError` says so.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional, Tuple

from synclient.errors import ConfigError, SyncError
from synclient.results import FileResult, typed_annotations
from synclient.sync.dry_run import PlanEntry, SyncPlan
from synclient.sync.runner import sync_from_platform

MANIFEST_CHOICES = ("all", "root", "suppress")


def syncFromSynapse(syn: Any, entity: Any, path: Optional[str] = None, ifcollision: str = "overwrite.local",
                    allFiles: Optional[list] = None, followLink: bool = False, manifest: str = "all",
                    downloadFile: bool = True) -> list:
    """Download a project, folder or file (an id such as ``"syn123"`` / ``"syn123.4"``, or a synapseclient entity)
    to ``path``, mirroring its folders, with a ``SYNAPSE_METADATA_MANIFEST.tsv`` per folder (``manifest="all"``),
    in the root only (``"root"``) or none (``"suppress"``). ``ifcollision``: ``overwrite.local`` | ``keep.local`` |
    ``keep.both`` for local files that differ from the remote ones. ``followLink``: download what links point to.

    Returns one ``synapseclient.File`` per file (``.path``, ``.id``, ``.versionNumber``, ``.annotations``, the
    entity's other fields and ``_file_handle``), appended to ``allFiles`` when given (deprecated in synapseutils,
    kept for callers that pass it). Raises :class:`~synclient.errors.SyncError` after the run when any file failed.
    """
    if manifest not in MANIFEST_CHOICES:
        raise ValueError('Value of manifest option should be one of the ("all", "root", "suppress")')
    if path is None or path == "":
        raise ConfigError("syncFromSynapse without a path (files into synapseclient's cache) is not supported by "
                          "synclient yet: give path=, or use synapseutils.syncFromSynapse for this call")
    entity_id, is_file = _root_of(entity)
    run = sync_from_platform(entity_id, Path(path).expanduser(), syn=syn, if_collision=ifcollision,
                             follow_links=followLink, manifest="suppress" if is_file else manifest,
                             entity_details=True, progress=False, dry_run=not downloadFile)
    files = plan_as_files(run) if isinstance(run, SyncPlan) else results_as_files(run)
    if allFiles is not None:
        allFiles.extend(files)
        return allFiles
    return files


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
        raise ConfigError(f"cannot sync {type(entity).__name__}: give a Synapse id or a Project, Folder or File")
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


def legacy_file(*, path: Optional[Path], entity: Optional[dict], file_handle: Optional[dict],
                annotations: dict) -> Any:
    """The ``synapseclient.File`` synapseutils returns for a file: the fields its models API converts
    (``File._convert_into_legacy_file``) from the entity's and its file handle's records, None ones left out."""
    import synapseclient

    record = entity or {}
    fields = {name: record.get(name) for name in (
        "id", "name", "description", "etag", "createdOn", "modifiedOn", "createdBy", "modifiedBy", "parentId",
        "versionNumber", "versionLabel", "versionComment", "dataFileHandleId")}
    fields = {name: value for name, value in fields.items() if value is not None}
    handle = {name: value for name, value in (file_handle or {}).items() if value is not None}
    return synapseclient.File(path=str(path) if path is not None else None,
                              properties={"isLatestVersion": record.get("isLatestVersion", False)},
                              annotations=annotations, _file_handle=handle or None, **fields)


def results_as_files(results: List[FileResult]) -> list:
    """Every result of a sync made with ``entity_details=True`` as ``synapseclient.File`` objects, in path order."""
    return [legacy_file(path=result.path, entity=result.entity or {"id": result.entity_id,
                                                                     "versionNumber": result.version},
                        file_handle=result.file_handle, annotations=result.annotations)
            for result in sorted(results, key=lambda r: str(r.path))]


def plan_as_files(plan: SyncPlan) -> list:
    """A dry run made with ``entity_details=True`` as synapseutils' ``downloadFile=False`` answer: each file with
    the folder it would go into as its path; an entity that could not be planned raises :class:`SyncError`."""
    if plan.failures:
        raise SyncError(plan.failures, plan.failures)
    entries: List[PlanEntry] = sorted(plan.entries, key=lambda e: e.rel_path)
    return [legacy_file(path=entry.destination.parent if entry.destination is not None else None,
                        entity=entry.entity, file_handle=entry.file_handle,
                        annotations=typed_annotations(entry.annotations or {}))
            for entry in entries]
