"""The download cart as a run's source (``synclient get --download-list``, :func:`~synclient.download_list`).

What the platform says of the cart is read once, before anything is written, in a bounded number of calls:

- every page of its **available files** (``AvailableFilesRequest``, 50 rows a page, each page one asynchronous job:
  its start and its polls; past the first, read 4 at a time when one count job tells their tokens): each row names
  the item as it was added (a version, or none: "the current one"), the file handle that item means now, its name
  and size;
- every page of the **actions required** for the others (``ActionRequiredRequest``), for the report, and when
  there are some, how many files need them (``FilesStatisticsRequest``: one job);
- the cart's **manifest** (one asynchronous job, its file handle's URL in one URL batch, then its CSV from storage):
  each available file's resolved version, MD5, content type and parent, and the columns synapseclient's
  ``get-download-list`` writes its ``manifest.csv`` with. Why the manifest and not only the rows: the rows carry no
  MD5 (the downloaded bytes must be checked against the platform's MD5, as a bundle's or a file view's would be) and
  a versionless row carries no version (the index must record one, so that a later run sees a new version); the
  manifest says both for every file in one job, where a bundle call per file would cost N calls; and the output
  manifest must have its columns.

Each row joined with its manifest row is a :class:`~synclient.sync.sources.by_id.FileVersionFacts` (no bundle call,
``from_row``: a URL batch that refuses its handle gives it its bundle's chance, as a file view's row). A row the
manifest does not describe (the cart changed between the two reads, an external file without a size) keeps its
name and takes its bundle call like a listed file. Files land flat in the target, named as a list of ids names them
(:meth:`~synclient.sync.sources.by_id.SourcePlan.laid_out`: a taken name becomes ``name (syn1).ext``).
"""

from __future__ import annotations

import csv
import io
import logging
import re
from collections import Counter, deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import Deque, Dict, List, Optional, Sequence, Tuple

from synclient.errors import MalformedAnswerError, SynclientError, TransferError
from synclient.platform.models import (
    ActionRequired,
    DownloadListItem,
    DownloadListItemResult,
    DownloadListPage,
    EntityHeader,
    EntityType,
    FileHandle,
    FileHandleRequest,
    wire_md5,
)
from synclient.platform.rest import Platform
from synclient.sync.sources.by_id import DescribedFiles, Entry, EntryKind, FileVersionFacts, SourcePlan
from synclient.sync.sources.resolve import LIST_ROOT, ListSource
from synclient.transfer.http import DataClient, fetch_whole
from synclient.transfer.urls import SignedUrl

log = logging.getLogger("synclient.sync")

#: the output manifest's name in the target (synapseclient names its own ``manifest_<ns>.csv``), kept free of files
CART_MANIFEST = "manifest.csv"
#: the columns synapseclient's ``get-download-list`` adds to the cart's manifest
PATH_COLUMN, ERROR_COLUMN = "path", "error"
#: tries of the manifest CSV's download (a cut body, a 5xx of storage) before the command fails
MANIFEST_TRIES = 5

#: a file version of the cart: (entity id, version it resolved to, None when the manifest did not say)
FileKey = Tuple[str, Optional[int]]


@dataclass
class CartFile:
    """One file version of the cart to download, and every item of the cart that names it (a file added once
    without a version and once at its current version is one download, two items to remove)."""

    header: EntityHeader  # at the version resolved (None: not described by the manifest; its bundle says)
    items: List[DownloadListItem] = field(default_factory=list)


@dataclass
class Cart:
    """What the cart holds, read: its files (in the platform's order, by id and version), the manifest's rows (one
    per available item, in its order) and columns, and the actions required for its other files."""

    files: List[CartFile] = field(default_factory=list)
    actions: List[ActionRequired] = field(default_factory=list)
    columns: List[str] = field(default_factory=list)
    manifest_rows: List[Tuple[FileKey, Dict[str, str]]] = field(default_factory=list)
    described: DescribedFiles = field(default_factory=dict)
    files_needing_action: int = 0  # (the platform's count: a file that needs two actions is counted under each)

    def source(self) -> ListSource:
        """The run's source: the cart's files flat in the target, described (no bundle call) where the manifest
        says enough; the name of the output manifest is kept free."""
        plan = SourcePlan(entries=[Entry(file.header, EntryKind.FILE) for file in self.files], standalone=False)
        return ListSource(
            plan,
            root_id=LIST_ROOT,
            description="download cart",
            described=dict(self.described),
            reserved=(CART_MANIFEST,),
        )


def read_cart(platform: Platform, *, data: Optional[DataClient] = None) -> Cart:
    """The cart of the platform's user, read (see the module docstring). ``data``: the client for the manifest's
    bytes (default: one of its own, closed afterwards).

    The reads overlap: the actions required, and once the first page shows a file (the manifest job refuses a cart
    with no available file) the manifest, are read beside the pages of available files; and the pages after the
    first are read :data:`PAGES_AT_ONCE` at a time when their tokens can be told in advance (:func:`_later_pages`),
    else one after another."""
    own = data is None
    client = data or DataClient(1, trusted_cas=platform.trusted_cas)
    try:
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="synclient-cart") as beside:
            actions = beside.submit(_actions, platform)
            first = platform.download_list_page()
            manifest: Optional[Future] = None
            if first.files:
                manifest = beside.submit(lambda: _parse_manifest(_manifest_bytes(platform, client)))
            rows = list(first.files)
            if first.next_page_token:
                later = _later_pages(platform, first)
                if later is None:  # one after another, as the tokens say
                    later = [
                        row
                        for page in platform.iter_download_list_pages(page_token=first.next_page_token)
                        for row in page.files
                    ]
                rows += later
            if manifest is None and rows:  # (a first page of no file, and files after it: read them all the same)
                manifest = beside.submit(lambda: _parse_manifest(_manifest_bytes(platform, client)))
            cart = Cart()
            cart.actions, cart.files_needing_action = actions.result()
            if manifest is not None:
                cart.columns, described = manifest.result()
                _join(cart, rows, described)
    finally:
        if own:
            client.close()
    return cart


def _actions(platform: Platform) -> Tuple[List[ActionRequired], int]:
    """The actions required, and how many files need one: the statistics job, made only when some file does (an
    action's count is of the files that need it, so their sum counts a file under two access requirements twice)."""
    actions = platform.download_list_actions()
    return actions, platform.download_list_requiring_action() if actions else 0


#: Synapse's page token, ``{limit}a{offset}`` (``NextPageToken.toToken``)
_PAGE_TOKEN = re.compile(r"([1-9][0-9]{0,5})a([0-9]{1,12})")
#: pages of available files read at once when their tokens can be told in advance
PAGES_AT_ONCE = 4


def _later_pages(platform: Platform, first: DownloadListPage) -> Optional[List[DownloadListItemResult]]:
    """The rows of every page after ``first``, read :data:`PAGES_AT_ONCE` at a time: when the first page's token
    says ``{limit}a{offset}`` with its own row count for both, the cart's count (one statistics job) tells every
    other page's token. Each page must then answer as told (its row count, its next token, the last none): else
    (the cart changed while it was read, the count is not the rows', or the platform pages otherwise) None, and the
    caller reads the pages one after another. At most :data:`PAGES_AT_ONCE` pages are asked ahead of the last one
    found as told, so a page not as told (or a count of far more files than the cart has) wastes at most that many
    jobs. Each page costs what it costs in order: its job."""
    match = _PAGE_TOKEN.fullmatch(first.next_page_token or "")
    limit = len(first.files)
    if match is None or int(match.group(1)) != limit or int(match.group(2)) != limit:
        return None
    total = platform.download_list_available_count()
    offsets = iter(range(limit, total, limit))
    rows: List[DownloadListItemResult] = []
    with ThreadPoolExecutor(max_workers=PAGES_AT_ONCE, thread_name_prefix="synclient-cart-pages") as pool:
        ahead: Deque[Tuple[int, Future]] = deque()

        def ask() -> None:
            for offset in islice(offsets, PAGES_AT_ONCE - len(ahead)):
                ahead.append((offset, pool.submit(platform.download_list_page, page_token=f"{limit}a{offset}")))

        ask()
        if not ahead:
            return None
        while ahead:
            offset, asked = ahead.popleft()
            page: DownloadListPage = asked.result()
            more = offset + limit < total
            told = f"{limit}a{offset + limit}" if more else None
            if (page.next_page_token or None) != told or len(page.files) != (limit if more else total - offset):
                for _, later in ahead:
                    later.cancel()
                log.info("the download cart's pages were not as their tokens told (did the cart change?): read again")
                return None
            rows += page.files
            ask()
    return rows


def _manifest_bytes(platform: Platform, client: DataClient) -> bytes:
    """The cart manifest's CSV: the job, its handle's URL (a URL batch: its creator may), its bytes."""
    handle_id = platform.download_list_manifest()
    request = FileHandleRequest(file_handle_id=handle_id, entity_id=handle_id)
    error: Optional[SynclientError] = None
    for _ in range(MANIFEST_TRIES):
        answer = platform.get_presigned_urls([request]).get(handle_id)
        if answer is None or not answer.url:
            raise TransferError(f"no URL for the download cart's manifest ({answer.failure_code if answer else '?'})")
        body = bytearray()
        try:
            fetch_whole(
                client,
                SignedUrl(answer.url),
                sink=lambda _offset, chunk, body=body: body.extend(chunk),  # type: ignore[misc]
                chunk_size=1 << 16,
                connect_timeout=10.0,
                stall_timeout=60.0,
                cancelled=lambda: False,
            )
            _manifest_text(bytes(body))  # (no MD5 says its bytes: a body garbled on the way is tried again)
            return bytes(body)
        except SynclientError as exc:
            if not exc.retryable:
                raise
            log.debug("the download cart's manifest: %s, trying again", exc)
            error = exc
    assert error is not None
    raise error


def _manifest_text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MalformedAnswerError(
            f"the download cart's manifest is no UTF-8 text (byte {exc.start}): its body was garbled"
        ) from None


def _parse_manifest(data: bytes) -> Tuple[List[str], List[Dict[str, str]]]:
    try:
        reader = csv.DictReader(io.StringIO(data.decode("utf-8-sig")))
        columns = list(reader.fieldnames or [])
        if "ID" not in columns or "versionNumber" not in columns:
            raise MalformedAnswerError("the download cart's manifest has no ID and versionNumber columns").spent()
        if PATH_COLUMN in columns or ERROR_COLUMN in columns:
            raise MalformedAnswerError("the download cart's manifest already has a 'path' or 'error' column").spent()
        return columns, [dict(row) for row in reader]
    except (UnicodeDecodeError, csv.Error) as exc:  # (not UTF-8; a NUL before Python 3.11; a field over 128 KiB)
        raise MalformedAnswerError(f"the download cart's manifest cannot be read as a CSV: {exc}").spent() from None


def _version_of(row: Dict[str, str]) -> Optional[int]:
    text = (row.get("versionNumber") or "").strip()
    return int(text) if text.isascii() and text.isdigit() else None  # ("²" is a digit int() refuses)


def _join(cart: Cart, rows: Sequence[DownloadListItemResult], manifest: List[Dict[str, str]]) -> None:
    """Each available row with the manifest row of the version it means: a versioned row's is its own; a
    versionless row's is the one its id has left once every versioned row of that id took its own (the manifest
    lists each available item once, at its resolved version). An item on two pages (the cart changed while it
    was paged by offset) is one item."""
    once: Dict[DownloadListItem, DownloadListItemResult] = {}
    for item in rows:
        once.setdefault(item.item, item)
    rows = list(once.values())
    by_key: Dict[FileKey, Dict[str, str]] = {}
    left: Dict[str, Counter] = {}  # id -> versions the manifest lists for it, less those versioned rows take
    for row in manifest:
        version = _version_of(row)
        by_key.setdefault((row.get("ID", ""), version), row)
        left.setdefault(row.get("ID", ""), Counter())[version] += 1
    for item in rows:
        if item.version_number is not None:
            left.get(item.file_entity_id, Counter())[item.version_number] -= 1
    files: Dict[FileKey, CartFile] = {}
    for item in rows:
        version = item.version_number
        if version is None:
            remaining = [v for v, n in left.get(item.file_entity_id, Counter()).items() if n > 0]
            version = remaining[0] if len(remaining) == 1 else None
        described = by_key.get((item.file_entity_id, version)) if version is not None else None
        facts = _facts(item, described, version) if described is not None and version is not None else None
        if facts is None and version != item.version_number:
            version = item.version_number  # not described: its bundle resolves it
        key = (item.file_entity_id, version)
        file = files.get(key)
        if file is None:
            header = EntityHeader(
                id=item.file_entity_id, name=item.file_name, type=EntityType.FILE, version_number=version
            )
            file = files[key] = CartFile(header)
            cart.files.append(file)
            if facts is not None:
                cart.described[key] = facts
        file.items.append(item.item)
    cart.manifest_rows = [((row.get("ID", ""), _version_of(row)), row) for row in manifest]


def _facts(item: DownloadListItemResult, row: Dict[str, str], version: int) -> Optional[FileVersionFacts]:
    """A row and its manifest row as the facts of one file version, when they agree on its size and the manifest
    records its MD5 (else None: its bundle decides)."""
    size_text = (row.get("dataFileSizeBytes") or "").strip()
    try:
        md5 = wire_md5(row.get("dataFileMD5Hex") or None, "dataFileMD5Hex", "the download cart's manifest")
    except MalformedAnswerError:
        return None
    if md5 is None or not (size_text.isascii() and size_text.isdigit()) or int(size_text) != item.file_size_bytes:
        return None
    handle = FileHandle(
        id=item.file_handle_id,
        content_size=int(size_text),
        content_md5=md5.lower(),
        file_name=item.file_name,
        content_type=row.get("contentType") or None,
    )
    parent = (row.get("parentId") or "").strip() or None
    return FileVersionFacts(handle, version, parent, from_row=True, modified_on=row.get("modifiedOn") or None)
