"""The run's manifests: which files each folder's ``SYNAPSE_METADATA_MANIFEST.tsv`` and ``manifest.csv`` list,
written after the walk.

During the run only paths are kept (the index holds each file's fields and annotations; a kept local conflict, not
indexed, is kept whole here); at the end the rows stream from the index in path order, one folder at a time. A
folder the walk listed that gets no manifest of a format now loses the stale one (a ``manifest.csv`` only where
synclient recorded writing it), and a remote entity named like a manifest keeps its path (that folder gets no
manifest of that name).
"""

from __future__ import annotations

import heapq
import logging
import threading
from pathlib import Path
from typing import AbstractSet, Dict, Iterable, Iterator, List, Mapping, Set

from synclient.sync.deletion import remove_stale_manifest
from synclient.sync.local.local_names import FilesystemNames
from synclient.sync.local.paths import TargetDirectory
from synclient.sync.records.index import LocalIndex
from synclient.sync.records.manifest import ManifestFormat, ManifestMode, ManifestRow, Provenance, write_manifests

log = logging.getLogger("synclient.sync")


class ManifestAssembly:
    """What the manifests of one run list, gathered while the run goes (thread-safe), written once at its end."""

    def __init__(
        self, *, target: TargetDirectory, index: LocalIndex, root_id: str, names: FilesystemNames = FilesystemNames()
    ) -> None:
        self._target = target
        self._names = names  # a remote entity takes a manifest's name as the filesystem compares names
        self._index = index
        self._root_id = root_id
        self._lock = threading.Lock()
        self._extras: List[ManifestRow] = []  # kept local conflicts: listed as they are, not indexed
        self.provenance: Dict[str, Provenance] = {}  # rel path -> provenance columns (provenance=True)
        # rel path -> entity name of a file named by its handle (handle_names.py): the manifest's "name" column
        self.entity_names: Dict[str, str] = {}
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
        indexed = (
            ManifestRow(
                root / row.local_path,
                row.parent_id,
                self.entity_names.get(row.rel_path) or row.rel_path.rsplit("/", 1)[-1],
                row.entity_id,
                row.content_type,
                annotations,
                self.provenance_of(row.rel_path),
            )
            for row, annotations in self._index.iter_sorted(self._root_id)
            if row.rel_path in listed_paths
        )
        extras = sorted(self._extras, key=lambda r: str(r.path))
        return heapq.merge(indexed, extras, key=lambda r: str(r.path))

    def write(
        self,
        *,
        mode: ManifestMode,
        listed_paths: AbstractSet[str],
        manifest_taken: AbstractSet[Path],
        listed_folders: Mapping[str, Path],
        formats: Iterable[ManifestFormat] = (ManifestFormat.TSV, ManifestFormat.CSV),
    ) -> None:
        """Every folder's manifests from this run's files; one that cannot be written is reported for its file
        (:attr:`errors`). ``manifest_taken``: local paths of remote entities named like a manifest, listed now. A
        folder the walk listed (``listed_folders``: rel dir -> folder) that gets no manifest of a format now (its
        files are gone, the mode is "root", the format is not wanted) loses the stale one."""
        self._index.flush()
        root = self._target.root
        formats = ManifestFormat.in_order(set(formats))
        # a remote entity named like a manifest, listed now or indexed from before: it keeps its path
        taken: Dict[ManifestFormat, Set[Path]] = {}
        for fmt in ManifestFormat:
            named = self._index.local_paths_named(fmt.filename, same=self._names.same_name)
            indexed = {root / path for path in named}
            taken[fmt] = {
                path.parent for path in set(manifest_taken) | indexed if self._names.same_name(path.name, fmt.filename)
            }
            for folder in sorted(taken[fmt]) if fmt in formats else ():
                log.warning("%s has a remote entity named %s; no manifest is written there", folder, fmt.filename)
        written, failures = write_manifests(
            lambda: self.rows(listed_paths),
            root,
            mode,
            formats=formats,
            skip=taken,
            covered=set(listed_folders.values()),
        )
        for failure in failures:
            reason = failure.error.strerror or str(failure.error)
            self.errors.append(f"cannot write {failure.path}: {reason}")
            log.warning("%s", self.errors[-1])
        failed = [failure.path for failure in failures]
        ours_before = self._index.manifest_files()
        self._remove_stale(written=written, failed=failed, taken=taken, listed_folders=listed_folders, ours=ours_before)
        self._index.set_manifest_folders(sorted({self._target.relative(path.parent) for path in written}))
        # one that failed now is still synclient's if it was before: a later run may replace or remove it
        self._index.set_manifest_files(
            sorted(
                {self._target.relative(path) for path in written}
                | {self._target.relative(path) for path in failed} & ours_before
            )
        )

    def _remove_stale(
        self,
        *,
        written: List[Path],
        failed: List[Path],
        taken: Mapping[ManifestFormat, Set[Path]],
        listed_folders: Mapping[str, Path],
        ours: AbstractSet[str],
    ) -> None:
        """Each format's manifest where this run wrote none of it: in the folders the walk listed and where the last
        run wrote any (folders gone since included; "root": an earlier "all" run's too). ``ours``: the manifest
        files the last run recorded."""
        root = self._target.root
        earlier = {rel_dir: root / rel_dir for rel_dir in self._index.manifest_folders()}
        for path in ours:
            folder = (root / path).parent
            earlier[self._target.relative(folder)] = folder
        for fmt in ManifestFormat:
            keep = {path.parent for path in written + failed if path.name == fmt.filename} | taken[fmt]
            for rel_dir, folder in {**earlier, **listed_folders}.items():
                if folder not in keep:  # a manifest.csv only if synclient wrote it (remove_stale_manifest checks)
                    remove_stale_manifest(self._target, rel_dir, index=self._index, name=fmt.filename, ours=ours)
