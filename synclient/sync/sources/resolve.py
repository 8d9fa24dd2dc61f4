"""One typed source per run: what the user named, resolved before anything is written into the one object its run
is built from (:class:`~synclient.sync.runner.SyncRun` takes it at construction; nothing is set on a run later).

- :class:`TreeSource`: a project or folder, mirrored into the target (walked; manifests; ``delete``);
- :class:`FileSource`: one file, at the version named or its current one;
- :class:`ListSource`: a list of ids, a dataset, a dataset collection or a query's selection, as
  :mod:`synclient.sync.sources.by_id` resolved it (a list that is one project or folder mirrors it, as by id);
- :class:`GivenFiles`: files a caller already found, each at its remote path (the synapseclient drop-in).

Each carries what resolving it learned, so that the run asks nothing twice: the root's header (fetched once per
run, by whoever resolves the source: the public function, or the CLI, which checks it against its flags first), a
list's entries and refusals, the file versions a query's file-view rows already describe (no bundle call for
them). :func:`resolve_entity`, :func:`resolve_ids` and :func:`resolve_query` make them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Sequence, Tuple, Union

from synclient.errors import ConfigError
from synclient.platform.models import EntityHeader, EntityType
from synclient.platform.rest import Platform
from synclient.results import QueryInfo, counted
from synclient.sync.local.name_gate import RemotePath
from synclient.sync.sources.by_id import DescribedFiles, SourcePlan, check_container_ref, plan_sources
from synclient.sync.sources.id_lists import EntityRef, ExpectedContent
from synclient.sync.sources.queries import select

#: the index rows' owner for a list of ids: never a sync root, so no sync's deletion pass ever touches them
LIST_ROOT = "ids"


@dataclass(frozen=True)
class _OneEntity:
    """A source that is one entity: its header (at the version fetched) names the run's root and its display."""

    root: EntityHeader

    @property
    def root_id(self) -> str:
        return self.root.id

    @property
    def description(self) -> str:
        return self.root.name


@dataclass(frozen=True)
class TreeSource(_OneEntity):
    """A project or folder, walked into the target itself: the run mirrors it (manifests, ``delete``)."""

    @property
    def mirrors_container(self) -> bool:
        return True


@dataclass(frozen=True)
class FileSource(_OneEntity):
    """One file, at the version named (or its current one): its index row keeps an existing owner."""

    @property
    def mirrors_container(self) -> bool:
        return False


@dataclass(frozen=True)
class ListSource:
    """Ids, a dataset, a collection or a query's selection, resolved (``plan``); the files a file view's rows
    already describe (``described``: a query over a view). Mirrors a container only when it is one project or
    folder alone (then its run is that container's sync: manifests, ``delete``)."""

    plan: SourcePlan
    root_id: str  # the index rows' owner: the one id, or LIST_ROOT
    description: str  # for the progress display
    root: Optional[EntityHeader] = None  # a dataset or collection synced by its id: its header
    query: Optional[QueryInfo] = None  # the query that selected the entities, for the report
    described: DescribedFiles = field(default_factory=dict)
    expected: ExpectedContent = field(default_factory=dict)  # what a list's rows expect of their files' content
    reserved: Tuple[str, ...] = ()  # names no entry at the target's top may take (the cart's manifest.csv)

    @property
    def mirrors_container(self) -> bool:
        return self.plan.one_container is not None


@dataclass(frozen=True)
class GivenFiles:
    """Files a caller already found (each a file version's header and its path under the target), owned by
    ``root_id``: no walk, no manifest, no deletion."""

    files: Tuple[Tuple[EntityHeader, RemotePath], ...]
    root_id: str

    @property
    def description(self) -> str:
        return self.root_id

    @property
    def mirrors_container(self) -> bool:
        return False


RunSource = Union[TreeSource, FileSource, ListSource, GivenFiles]


def resolve_entity(platform: Platform, ref: EntityRef, *, header: Optional[EntityHeader] = None) -> RunSource:
    """The source of a sync of one entity (``sync_from_platform``; the CLI's ``get`` of one id), checked before
    anything is written: a container or a file, and a version only of a file (one that exists: a missing version
    is as much a usage error as a missing id); a dataset or collection resolved into its items. ``header``: the
    entity's header when the caller already has it (it is not asked for again)."""
    root = header if header is not None else platform.get_entity_header(ref.entity_id)
    if not (root.type.is_container or root.type is EntityType.FILE or root.type.has_items):
        raise ConfigError(
            f"{ref.entity_id} is a {root.type.label}; sync takes a project, folder, file, dataset or dataset collection"
        )
    if root.type.is_container:
        check_container_ref(ref, root.type)
        return TreeSource(root)
    if root.type.has_items:  # its items, as download_many has them (a dataset's version is checked as it is read)
        return ListSource(
            plan_sources(platform, [ref], recursive=True, known=[root]),
            root_id=ref.entity_id,
            description=root.name,
            root=root,
        )
    if ref.version is None:
        return FileSource(root)
    platform.get_entity(ref.entity_id, version=ref.version)  # NotFoundError for a version that does not exist
    return FileSource(replace(root, version_number=ref.version))


def resolve_ids(platform: Platform, refs: Sequence[EntityRef], *, recursive: bool) -> ListSource:
    """The source of ``download_many``: every id's header (one call per 1,000 ids) and what it holds, and what
    the ids' rows expect of their files' content (a manifest replayed: id_lists.py)."""
    source = _list_source(plan_sources(platform, refs, recursive=recursive), refs)
    expected = {(ref.entity_id, ref.version): ref.expected for ref in refs if ref.expected is not None}
    return replace(source, expected=expected) if expected else source


def resolve_query(platform: Platform, sql: str, *, table_id: str, recursive: bool) -> ListSource:
    """The source of ``download_query``: every page of the query, then its entities as a list of ids is resolved;
    a file view's rows describe their files (no bundle call for them)."""
    selection = select(platform, sql, table_id=table_id)
    # the table's header rides along with its rows' entities: it says whether the rows are a view's
    headers = platform.get_entity_headers([table_id] + [ref.entity_id for ref in selection.refs])
    table = headers.get(table_id)
    plan = (
        plan_sources(platform, selection.refs, recursive=recursive, known=list(headers.values()), standalone=False)
        if selection.refs
        else SourcePlan()
    )
    is_view = table is not None and table.type is EntityType.ENTITY_VIEW
    query = QueryInfo(
        sql=sql,
        table=table_id,
        rows=selection.rows,
        entities=len(selection.refs),
        rows_without_id=selection.rows_without_id,
    )
    return _list_source(plan, (), query=query, described=selection.row_files if is_view else {})


def _list_source(
    plan: SourcePlan,
    refs: Sequence[EntityRef],
    *,
    query: Optional[QueryInfo] = None,
    described: Optional[DescribedFiles] = None,
) -> ListSource:
    """A list's source: alone, a project or folder is synced as by id (its own root); one id owns its rows."""
    container = plan.one_container
    root_id = container.id if container else refs[0].entity_id if len(refs) == 1 else LIST_ROOT
    description = container.name if container else counted(len(refs), "id") if refs else "query"
    return ListSource(plan, root_id=root_id, description=description, query=query, described=described or {})
