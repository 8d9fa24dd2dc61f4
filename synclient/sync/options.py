"""What a sync should do, in one validated object (the sync layer's counterpart of
:class:`~synclient.transfer.config.TransferConfig`, which says how bytes move).

    from synclient import SyncOptions, sync_from_platform
    sync_from_platform("syn123", "data", options=SyncOptions(delete=True, include=["*.csv"]))

String values are accepted where users name a choice (``if_collision="keep.both"``) and parsed into the enums, with
a one-line :class:`~synclient.errors.ConfigError` for a value that is not one of them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, Mapping, Optional, Tuple, Union

from synclient.choices import Choice
from synclient.errors import ConfigError
from synclient.sync.local.local_names import FilesystemNames
from synclient.sync.plan.download_order import OrderBy
from synclient.sync.plan.filters import Age, PathFilter, SizeAgeFilter, cutoff, parse_age
from synclient.sync.plan.handle_names import FileNames
from synclient.sync.plan.planner import Collision
from synclient.sync.records.manifest import ManifestFormat, ManifestMode
from synclient.transfer.cap import CutoffMode, TransferCap
from synclient.units import parse_size


class OnError(Choice):
    RAISE = "raise"  # raise SyncError (with every result attached) when any file failed
    CONTINUE = "continue"  # return the results; failures are in them


@dataclass(frozen=True, init=False)
class SyncOptions:
    """The choices of one sync (every field keyword-only).

    - ``if_collision``: ``overwrite.local`` | ``keep.local`` | ``keep.both`` for local files changed since synclient
      wrote them (or never written by it) that differ from the remote file.
    - ``delete``: remove local files synclient wrote that are gone remotely (never other files).
    - ``manifest``: ``all`` | ``root`` | ``suppress`` (where the manifests go).
    - ``manifest_formats``: which manifests: ``tsv`` (``SYNAPSE_METADATA_MANIFEST.tsv``), ``csv``
      (``manifest.csv``), one or both (the default, as synapseclient 4.14 writes).
    - ``include`` / ``exclude``: glob patterns on the remote path relative to the root (see
      :mod:`synclient.sync.plan.filters`), applied before any per-file call.
    - ``dry_run``: plan only; the sync returns a :class:`~synclient.sync.plan.dry_run.SyncPlan` and writes nothing.
    - ``follow_links``: follow Link entities (cycles are refused).
    - ``provenance``: fill the manifest's provenance columns (one extra call per file).
    - ``on_error``: ``raise`` (a :class:`~synclient.errors.SyncError` when any file failed) | ``continue``.
    - ``progress``: draw a tqdm bar (a widget in Jupyter) when stderr is a terminal or in a notebook.
    - ``entity_details``: keep each file's full entity record in its result (``FileResult.entity``), which takes
      one bundle call per file even when the index shows the file unchanged (``syncFromSynapse`` needs it to
      return complete ``synapseclient.File`` objects).
    - ``synapse_cache``: share synapseclient's download cache (``~/.synapseCache``, or ``[cache] location`` of the
      config file) when this machine has one: a file it holds is copied, not downloaded, and every file
      installed is recorded there (see :mod:`synclient.synapse_cache`). A path instead of ``True`` names the
      cache root (a ``Synapse``'s ``syn.cache.cache_root_dir``), used when it exists. ``synapse_cache_link``:
      hard-link such a file instead of copying it (no bytes written, but the two names are one file: a change to
      either is a change to both).
    - ``filesystem_names``: what the target's filesystem does with names (case-insensitive, Unicode-normalizing,
      Windows' rules), which decides the local name of a remote name it cannot hold
      (:mod:`synclient.sync.local.local_names`). None (the default): ``SYNCLIENT_FS_PROBE`` if set, else a probe of the
      target at the start of the run; or a :class:`~synclient.sync.local.local_names.FilesystemNames`, or its spelling
      (``"case,nfd,windows"``), to force the answer.
    - ``file_names``: ``entity`` (the default) names each file by its entity's name, what the web shows and unique
      within its folder; ``handle`` by its file handle's ``fileName``, as synapseclient 4.14 names a download (the
      drop-ins ``syncFromSynapse`` / ``sync_from_synapse`` use it; see :mod:`synclient.sync.plan.handle_names`). It
      applies to a project's or folder's walk and to a file root; lists of ids, datasets and queries name their
      files by their entities.
    - ``checksum``: hash every local copy synclient wrote instead of trusting its size and modification time (the
      index's fast path); one whose bytes are not the remote's is downloaded again (action ``repair``). A handle
      that records no MD5 is compared by size. Other local files are hashed anyway and follow ``if_collision``.
    - ``keep_paths``: a list's files (ids, a dataset, a collection, a query's selection, the download cart) land at
      their remote paths, ``<project name>/<folder path>/<name>`` under the target, where a tree sync of their
      project into ``TARGET/<project name>`` puts them (:mod:`synclient.sync.sources.kept_paths`); a list's project
      or folder is walked into its own remote path. Only for lists: a project or folder synced alone keeps its
      paths already (a usage error with it).
    - ``max_transfer``: stop after this many bytes downloaded in this run (an int, or ``"10G"``, ``"500M"``: binary
      units); ``cutoff_mode``: ``hard`` (the default: running transfers stop at the cap), ``soft`` (no new file
      starts at the cap) or ``cautious`` (no file starts that would pass it); see :mod:`synclient.transfer.cap`.
      The files left are reported (``results.report.cap_reached``, ``left_files``, ``left_bytes``), not failed;
      partials stay for the next run.
    - ``min_size`` / ``max_size``: only files of at least / at most this size (bytes, or rclone's ``100k``, ``1G``:
      binary units, no unit is KiB); ``min_age`` / ``max_age``: only files whose entity's ``modifiedOn`` is at
      least / at most this old (rclone's ``30m``, ``2h``, ``7d``, ``1w``, ``1M``, ``1y``, a timedelta, or a date:
      ``2026-01-01``, a datetime), counted from the run's start. Filters like ``include``/``exclude``, bounds
      included (:class:`~synclient.sync.plan.filters.SizeAgeFilter`): a file they leave out is neither downloaded
      nor deleted, and no call beyond what tells its size and age is made for it.
    - ``order_by``: the order downloads start among the files ready to start at once (rclone's ``size``,
      ``name``, ``modtime``, each ``,ascending`` or ``,descending``; :mod:`synclient.sync.plan.download_order`);
      None: the order files come (the default).
    """

    if_collision: Collision
    delete: bool
    manifest: ManifestMode
    include: Tuple[str, ...]
    exclude: Tuple[str, ...]
    dry_run: bool
    follow_links: bool
    provenance: bool
    on_error: OnError
    progress: bool
    manifest_formats: FrozenSet[ManifestFormat]
    entity_details: bool
    synapse_cache: Union[bool, Path]
    synapse_cache_link: bool
    filesystem_names: Optional[FilesystemNames]
    file_names: FileNames
    checksum: bool
    keep_paths: bool
    max_transfer: Optional[int]
    cutoff_mode: CutoffMode
    min_size: Optional[int]
    max_size: Optional[int]
    min_age: Optional[Age]
    max_age: Optional[Age]
    order_by: Optional[OrderBy]

    def __init__(
        self,
        *,
        if_collision: Union[Collision, str] = Collision.OVERWRITE_LOCAL,
        delete: bool = False,
        manifest: Union[ManifestMode, str] = ManifestMode.ALL,
        include: Union[str, Iterable[str]] = (),
        exclude: Union[str, Iterable[str]] = (),
        dry_run: bool = False,
        follow_links: bool = False,
        provenance: bool = False,
        on_error: Union[OnError, str] = OnError.RAISE,
        progress: bool = True,
        manifest_formats: Union[str, ManifestFormat, Iterable[Union[str, ManifestFormat]]] = (
            ManifestFormat.TSV,
            ManifestFormat.CSV,
        ),
        entity_details: bool = False,
        synapse_cache: Union[bool, str, Path] = True,
        synapse_cache_link: bool = False,
        filesystem_names: Union[FilesystemNames, str, None] = None,
        file_names: Union[FileNames, str] = FileNames.ENTITY,
        checksum: bool = False,
        keep_paths: bool = False,
        max_transfer: Union[int, str, None] = None,
        cutoff_mode: Union[CutoffMode, str] = CutoffMode.HARD,
        min_size: Union[int, str, None] = None,
        max_size: Union[int, str, None] = None,
        min_age: Optional[Age] = None,
        max_age: Optional[Age] = None,
        order_by: Union[OrderBy, str, None] = None,
    ) -> None:
        set_ = object.__setattr__  # frozen: every value normalized once, here
        set_(self, "if_collision", Collision.parse(if_collision, option="if_collision"))
        set_(self, "delete", bool(delete))
        set_(self, "manifest", ManifestMode.parse(manifest, option="manifest"))
        patterns = PathFilter.build(include, exclude)  # one string or many, as tuples
        set_(self, "include", patterns.include)
        set_(self, "exclude", patterns.exclude)
        set_(self, "dry_run", bool(dry_run))
        set_(self, "follow_links", bool(follow_links))
        set_(self, "provenance", bool(provenance))
        set_(self, "on_error", OnError.parse(on_error, option="on_error"))
        set_(self, "progress", bool(progress))
        set_(self, "manifest_formats", ManifestFormat.parse_set(manifest_formats, option="manifest_formats"))
        if not self.manifest_formats:
            raise ConfigError("manifest_formats needs a format (tsv, csv); manifest='suppress' writes none")
        set_(self, "entity_details", bool(entity_details))
        set_(
            self,
            "synapse_cache",
            Path(synapse_cache).expanduser() if isinstance(synapse_cache, (str, Path)) else bool(synapse_cache),
        )
        set_(self, "synapse_cache_link", bool(synapse_cache_link))
        set_(
            self,
            "filesystem_names",
            FilesystemNames.parse(filesystem_names) if isinstance(filesystem_names, str) else filesystem_names,
        )
        set_(self, "file_names", FileNames.parse(file_names, option="file_names"))
        set_(self, "checksum", bool(checksum))
        set_(self, "keep_paths", bool(keep_paths))
        set_(self, "max_transfer", _size(max_transfer, "max_transfer"))
        set_(self, "cutoff_mode", CutoffMode.parse(cutoff_mode, option="cutoff_mode"))
        set_(self, "min_size", _size(min_size, "min_size"))
        set_(self, "max_size", _size(max_size, "max_size"))
        for name, age in (("min_age", min_age), ("max_age", max_age)):
            if age is not None:
                parse_age(age, option=name)  # (refused now; its moment is taken when a run starts)
            set_(self, name, age)
        set_(self, "order_by", OrderBy.parse(order_by) if isinstance(order_by, str) else order_by)

    @classmethod
    def overridden(cls, base: Optional[SyncOptions], keywords: Mapping[str, object]) -> SyncOptions:
        """``base`` (None: the defaults) with each field that ``keywords`` gives (a value, not None) on top, validated
        once. Keywords that name no field are not options and are ignored: a public function passes its
        ``locals()``, where each option keyword it takes is named as the field it overrides."""
        options = base if base is not None else cls()
        given = {f.name: keywords[f.name] for f in fields(cls) if keywords.get(f.name) is not None}
        return options.replace(**given) if given else options

    def replace(self, **changes: object) -> SyncOptions:
        """A copy with some choices changed (``dataclasses.replace`` cannot call a keyword-only ``__init__``'s
        normalization for the unchanged ones)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return SyncOptions(**values)

    @property
    def path_filter(self) -> PathFilter:
        return PathFilter(include=self.include, exclude=self.exclude)  # frozen and small: cheap to build

    def size_age_filter(self, now: dt.datetime) -> SizeAgeFilter:
        """The size and age filters of a run that starts at ``now`` (an aware datetime)."""
        ages = {name: getattr(self, name) for name in ("min_age", "max_age")}
        moments = {name: cutoff(parse_age(age), now) for name, age in ages.items() if age is not None}
        return SizeAgeFilter(
            min_size=self.min_size,
            max_size=self.max_size,
            modified_after=moments.get("max_age"),
            modified_before=moments.get("min_age"),
        )

    @property
    def filter_settings(self) -> Dict[str, object]:
        """The size, age and order settings given, as ``--json`` shows them (ages as given, sizes in bytes)."""
        shown = {
            "min_size": self.min_size,
            "max_size": self.max_size,
            "min_age": self.min_age,
            "max_age": self.max_age,
            "order_by": self.order_by,
        }
        given = {name: value for name, value in shown.items() if value is not None}
        return {name: value if isinstance(value, int) else str(value) for name, value in given.items()}

    @property
    def needs_bundle(self) -> bool:
        """Every file takes its bundle call, even one the index shows unchanged (the index has not all it needs; or,
        files named by their handles, the call was made to name it: handle_names.py)."""
        return self.provenance or self.entity_details or self.file_names is FileNames.HANDLE

    def transfer_cap(self) -> Optional[TransferCap]:
        """A new cap for one run (None: no ``max_transfer``)."""
        return TransferCap(self.max_transfer, self.cutoff_mode) if self.max_transfer is not None else None

    @property
    def wants_manifest(self) -> bool:
        return self.manifest is not ManifestMode.SUPPRESS


def _size(value: Union[int, str, None], option: str) -> Optional[int]:
    """A size option in bytes: an int, or a size as written (``"10G"``, :func:`~synclient.units.parse_size`); None
    stays None."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    try:
        if isinstance(value, str):
            return parse_size(value)
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc}") from None
    raise ConfigError(f"{option}: a size is bytes (a whole number >= 0) or rclone's 100k, 1G; not {value!r}")
