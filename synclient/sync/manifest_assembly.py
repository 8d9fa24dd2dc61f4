"""The run's manifests: which files each folder's ``SYNAPSE_METADATA_MANIFEST.tsv`` lists, written after the walk.

During the run only paths are kept (the index holds each file's fields and annotations; a kept local conflict, not
indexed, is kept whole here); at the end the rows stream from the index in path order, one folder at a time. A
folder the walk listed that gets no manifest now loses the stale one, and a remote entity named like the manifest
keeps its path (that folder gets none).
"""
from __future__ import annotations

import heapq
import logging
import threading
from pathlib import Path
from typing import AbstractSet, Dict, Iterator, List, Mapping

from synclient.sync.deletion import remove_stale_manifest
from synclient.sync.index import LocalIndex
from synclient.sync.manifest import MANIFEST_FILENAME, ManifestMode, ManifestRow, Provenance, write_manifests
from synclient.sync.paths import TargetDirectory

log = logging.getLogger("synclient.sync")


class ManifestAssembly:
    """What the manifests of one run list, gathered while the run goes (thread-safe), written once at its end."""

    def __init__(self, *, target: TargetDirectory, index: LocalIndex, root_id: str) -> None:
        self._target = target
        self._index = index
        self._root_id = root_id
        self._lock = threading.Lock()
        self._extras: List[ManifestRow] = []  # kept local conflicts: listed as they are, not indexed
        self.provenance: Dict[str, Provenance] = {}  # rel path -> provenance columns (provenance=True)
        self.errors: List[str] = []  # one line per folder whose manifest could not be written

    def add_provenance(self, rel_path: str, provenance: Provenance) -> None:
        with self._lock:
            self.provenance[rel_path] = provenance

    def add_unindexed(self, row: ManifestRow) -> None:
        with self._lock:
            self._extras.append(row)

    def provenance_of(self, rel_path: str) -> Provenance:
        return self.provenance.get(rel_path, Provenance())

    def rows(self, listed_paths: AbstractSet[str]) -> Iterator[ManifestRow]:
        """This run's files, sorted by path: indexed ones streamed from the index, plus the few kept conflicts."""
        root = self._target.root
        indexed = (ManifestRow(root / row.local_path, row.parent_id, row.rel_path.rsplit("/", 1)[-1],
                               row.entity_id, row.content_type, annotations, self.provenance_of(row.rel_path))
                   for row, annotations in self._index.iter_sorted(self._root_id)
                   if row.rel_path in listed_paths)
        extras = sorted(self._extras, key=lambda r: str(r.path))
        return heapq.merge(indexed, extras, key=lambda r: str(r.path))

    def write(self, *, mode: ManifestMode, listed_paths: AbstractSet[str], manifest_taken: AbstractSet[Path],
              listed_folders: Mapping[str, Path]) -> None:
        """Every folder's manifest from this run's files; one that cannot be written is reported for its folder
        (:attr:`errors`). A folder the walk listed (``listed_folders``: rel dir -> folder) that gets no manifest
        now (its files are gone, or the mode is "root") loses the stale one."""
        self._index.flush()
        root = self._target.root
        # a remote entity named like the manifest, listed now or indexed from before: it keeps its path
        taken = set(manifest_taken) | {(root / path).parent
                                       for path in self._index.local_paths_named(MANIFEST_FILENAME)}
        for folder in sorted(taken):
            log.warning("%s has a remote entity named %s; no manifest is written there", folder, MANIFEST_FILENAME)
        written, failures = write_manifests(lambda: self.rows(listed_paths), root, mode, skip=taken)
        for failure in failures:
            reason = failure.error.strerror or str(failure.error)
            self.errors.append(f"cannot write {failure.folder / MANIFEST_FILENAME}: {reason}")
            log.warning("%s", self.errors[-1])
        keep = {path.parent for path in written} | taken | {failure.folder for failure in failures}
        earlier = {rel_dir: root / rel_dir for rel_dir in self._index.manifest_folders()}  # incl. folders gone since
        for rel_dir, folder in {**earlier, **listed_folders}.items():  # ("root": an earlier "all" run's too)
            if folder not in keep:
                remove_stale_manifest(self._target, rel_dir, index=self._index)
        self._index.set_manifest_folders(sorted(p.parent.relative_to(root).as_posix() if p.parent != root else ""
                                                for p in written))
