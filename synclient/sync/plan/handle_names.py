"""Which name a file lands under: its entity's (synclient's rule) or its file handle's (synapseclient's).

On Synapse a file entity has two names: the entity's ``name`` (what the web shows; unique within its folder) and
its data file handle's ``fileName`` (what was uploaded; they differ once an entity is renamed or was stored with
``name=``, and two files of one folder may share one). synclient names a file by its entity (:attr:`FileNames.ENTITY`,
``synclient get`` and :func:`~synclient.sync.runner.sync_from_platform`'s default). synapseclient 4.14 names a
download by its handle's ``fileName`` (``core/download/download_functions.py``, ``download_file_entity`` and
``download_file_entity_model``), or, when its cache holds an unmodified copy of that handle, by that copy's
basename; folders by their entity names. :attr:`FileNames.HANDLE` does the same, for the drop-ins
(:mod:`synclient.synapseutils_compat`), so both land path for path where synapseclient does.

Two files of one folder whose handles share a ``fileName``: synapseclient writes both to that one path (with its
default ``overwrite.local`` the later download replaces the earlier one's bytes, and both Files point there). That
loses a file, so here the file of the smallest id keeps the name and every other gets its id in it,
``name (syn456).ext`` (as synclient names a list's twins), logged as a warning. A name taken by a folder of the
same listing is the folder's. Every name, the handle's included, still goes through the name gate
(:mod:`synclient.sync.local.name_gate`): a ``fileName`` with ``/``, ``..`` or NUL fails its file alone.

:class:`HandleNames` fetches each file's bundle when its folder is listed (the same call the pipeline makes for it,
kept for the pipeline, so no call is made twice).
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Tuple

from synclient.choices import Choice
from synclient.errors import SynclientError
from synclient.platform.models import EntityHeader, EntityType, FileBundle
from synclient.platform.rest import Platform
from synclient.synapse_cache import SynapseCache
from synclient.sync.local.local_names import id_order, with_id

log = logging.getLogger("synclient.sync")

#: bundle calls of one folder's files at once, by default
FETCHES = 8


class FileNames(Choice):
    ENTITY = "entity"  # the entity's name (synclient)
    HANDLE = "handle"  # the file handle's fileName (synapseclient; the drop-ins)


class HandleNames:
    """Renames the files of a listing to their handles' ``fileName`` (see the module docstring). Thread-safe."""

    def __init__(self, platform: Platform, cache: Optional[SynapseCache] = None, *, fetches: int = FETCHES) -> None:
        self._platform = platform
        self._cache = cache
        self._fetches = max(1, fetches)  # a folder's bundle calls at once (the run's workers)
        self._bundles: Dict[Tuple[str, Optional[int]], FileBundle] = {}
        self._lock = threading.Lock()

    def take(self, entity_id: str, version: Optional[int]) -> Optional[FileBundle]:
        """The bundle fetched for naming this file version (once: it is handed over), or None."""
        with self._lock:
            return self._bundles.pop((entity_id, version), None)

    def name(self, header: EntityHeader) -> EntityHeader:
        """``header`` (a file version) named as synapseclient names its download; unchanged when its bundle could
        not be had (the pipeline's own call then decides)."""
        try:
            bundle = self._platform.get_file_bundle(header.id, version=header.version_number, include_annotations=True)
        except SynclientError:
            return header
        with self._lock:
            self._bundles[(header.id, header.version_number)] = bundle
        handle = bundle.file_handle
        if handle is None:
            return header
        name = handle.file_name or header.name
        if self._cache is not None and handle.content_size is not None:
            cached = self._cache.lookup(handle.id, md5=handle.content_md5, size=handle.content_size)
            if cached is not None:  # synapseclient names it after the copy it copies
                name = cached.name
        return replace(header, name=name)

    def listing(self, headers: Sequence[EntityHeader]) -> List[EntityHeader]:
        """A whole folder's listing with its files named by their handles, twins named apart."""
        files = [header for header in headers if header.type is EntityType.FILE]
        if len(files) > 1:
            with ThreadPoolExecutor(max_workers=min(self._fetches, len(files))) as fetchers:
                named = list(fetchers.map(self.name, files))
        else:
            named = [self.name(h) for h in files]
        taken = {header.name for header in headers if header.type is not EntityType.FILE}
        result = [header for header in headers if header.type is not EntityType.FILE]
        for header in sorted(named, key=lambda h: id_order(h.id)):
            if header.name in taken:
                twin = with_id(header.name, header.id, is_folder=False)
                log.warning(
                    "%s: its file name %r is another entry's in its folder; it is written as %r",
                    header.id,
                    header.name,
                    twin,
                )
                header = replace(header, name=twin)
            taken.add(header.name)
            result.append(header)
        return result


def named_file(names: Optional[HandleNames], header: EntityHeader) -> EntityHeader:
    """A file outside a listing (a file root, a link's target) named as ``names`` say (None: by its entity)."""
    return names.name(header) if names is not None else header
