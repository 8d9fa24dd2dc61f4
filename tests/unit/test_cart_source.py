"""The download cart's pieces without a server (issue 33, part 1): the remove call's batches of at most 1,000 items
keyed as the cart has them, the query pages and their models, the join of the cart's rows with its manifest, what
counts as done, and the action line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import responses
from client_support import ROOT

from synclient.errors import LocalIOError, MalformedAnswerError
from synclient.platform.models import ActionRequired, DownloadListItem, DownloadListItemResult, DownloadListPage
from synclient.results import CartInfo, FileResult, SyncStatus
from synclient.sync.download_cart import NOT_READ, _action_label, _outcomes, _succeeded, _write_manifest
from synclient.sync.sources.cart import PAGES_AT_ONCE, Cart, _join, _later_pages, _parse_manifest, read_cart

PKG = "org.sagebionetworks.repo.model.download."


@responses.activate
def test_remove_sends_batches_of_at_most_1000_keyed_as_added(platform):
    bodies = []

    def answer(request):
        body = json.loads(request.body)
        bodies.append(body)
        return 200, {}, json.dumps({"numberOfFilesRemoved": len(body["batchToRemove"])})

    responses.add_callback(responses.POST, f"{ROOT}/repo/v1/download/list/remove", callback=answer)
    items = [DownloadListItem(f"syn{i}", i % 3 or None) for i in range(1, 2502)]
    assert platform.remove_from_download_list(items) == 2501
    assert [len(body["batchToRemove"]) for body in bodies] == [1000, 1000, 501]
    sent = [row for body in bodies for row in body["batchToRemove"]]
    assert sent == [item.to_wire() for item in items]
    # a versionless item is removed by a versionless key: no versionNumber at all, not null
    assert sent[2] == {"fileEntityId": "syn3"} and sent[0] == {"fileEntityId": "syn1", "versionNumber": 1}


@responses.activate
def test_every_page_of_available_files_is_a_job_polled_to_its_answer(platform, monkeypatch):
    monkeypatch.setattr(platform, "_sleep", lambda seconds: None)
    starts = []

    def start(request):
        starts.append(json.loads(request.body))
        return 201, {}, json.dumps({"token": f"t{len(starts)}"})

    def row(i):
        return {"fileEntityId": f"syn{i}", "fileName": f"f{i}", "fileSizeBytes": i, "fileHandleId": str(100 + i)}

    responses.add_callback(responses.POST, f"{ROOT}/repo/v1/download/list/query/async/start", callback=start)
    get = f"{ROOT}/repo/v1/download/list/query/async/get/"
    responses.add(responses.GET, get + "t1", json={"jobState": "PROCESSING"}, status=202)
    answer = {"concreteType": PKG + "AvailableFilesResponse", "page": [row(1)], "nextPageToken": "50a50"}
    responses.add(responses.GET, get + "t1", json={"responseDetails": answer}, status=201)
    last = {"concreteType": PKG + "AvailableFilesResponse", "page": [dict(row(2), versionNumber=3)]}
    responses.add(responses.GET, get + "t2", json={"responseDetails": last}, status=201)
    rows = platform.download_list_available()
    assert [(r.file_entity_id, r.version_number, r.file_handle_id) for r in rows] == [
        ("syn1", None, "101"),
        ("syn2", 3, "102"),
    ]
    assert [s["requestDetails"] for s in starts] == [
        {"concreteType": PKG + "AvailableFilesRequest"},
        {"concreteType": PKG + "AvailableFilesRequest", "nextPageToken": "50a50"},
    ]
    assert all(s["concreteType"] == PKG + "DownloadListQueryRequest" for s in starts)


def test_the_models_refuse_what_is_malformed():
    with pytest.raises(MalformedAnswerError):
        DownloadListItemResult.from_wire({"fileEntityId": "syn1", "fileName": "a", "fileHandleId": "../x"})
    with pytest.raises(MalformedAnswerError):  # an answer of another kind than asked
        DownloadListPage.from_wire({"responseDetails": {"concreteType": PKG + "FilesStatisticsResponse"}})
    action = ActionRequired.from_wire(
        {"action": {"concreteType": PKG + "MeetAccessRequirement", "accessRequirementId": 9}, "count": 2}
    )
    assert action == ActionRequired("MeetAccessRequirement", "9", 2)
    assert ActionRequired.from_wire(
        {"action": {"concreteType": PKG + "RequestDownload", "benefactorId": 5}, "count": 1}
    ) == ActionRequired("RequestDownload", "syn5", 1)


@pytest.mark.parametrize(
    "data",
    [b"ID,versionNumber\nsyn1\xff,1\n", b"ID,versionNumber\nsyn1," + b"x" * 200_000 + b"\n"],
    ids=["not UTF-8", "a field over the csv module's limit"],
)
def test_a_manifest_that_is_no_readable_csv_is_one_clear_error(data):
    """(It escaped as a UnicodeDecodeError or a csv.Error: a traceback, not the one line of a malformed answer.)"""
    with pytest.raises(MalformedAnswerError, match="the download cart's manifest cannot be read as a CSV"):
        _parse_manifest(data)


def _row(entity_id, version, size, handle, name="f.txt"):
    return DownloadListItemResult(entity_id, version, name, size, handle)


def _manifest_row(entity_id, version, size, md5="0" * 32):
    return {
        "ID": entity_id,
        "versionNumber": str(version),
        "dataFileSizeBytes": str(size),
        "dataFileMD5Hex": md5,
        "contentType": "text/plain",
        "parentId": "syn9",
    }


def test_join_pins_each_row_to_the_version_it_means():
    """A versioned row is its own version; a versionless one is the version its id has left in the manifest;
    the same file version named twice is one download with two items to remove."""
    cart = Cart()
    rows = [
        _row("syn1", 1, 3, "11"),
        _row("syn1", None, 5, "12"),
        _row("syn2", None, 7, "21"),
        _row("syn2", 4, 7, "21"),
    ]
    manifest = [_manifest_row("syn1", 1, 3), _manifest_row("syn1", 2, 5), _manifest_row("syn2", 4, 7)]
    manifest.append(_manifest_row("syn2", 4, 7))  # (syn2 without a version is its current version, 4, too)
    _join(cart, rows, manifest)
    assert [(f.header.id, f.header.version_number, len(f.items)) for f in cart.files] == [
        ("syn1", 1, 1),
        ("syn1", 2, 1),
        ("syn2", 4, 2),
    ]
    assert cart.files[2].items == [DownloadListItem("syn2"), DownloadListItem("syn2", 4)]
    facts = cart.described[("syn1", 2)]
    assert (facts.handle.id, facts.handle.content_size, facts.version, facts.parent_id) == ("12", 5, 2, "syn9")
    assert facts.handle.content_md5 == "0" * 32 and facts.from_row


def test_an_item_on_two_pages_is_one_item():
    """Synapse pages by offset: a cart changed while it is read can show a row on two pages. It is one item (it was
    two: removed twice, counted as one left in the cart, and its twin's versioned row took the manifest row its
    versionless sibling needed, which then cost a bundle call)."""
    cart = Cart()
    rows = [_row("syn1", 2, 5, "12"), _row("syn1", None, 5, "12"), _row("syn1", 2, 5, "12")]
    _join(cart, rows, [_manifest_row("syn1", 2, 5), _manifest_row("syn1", 2, 5)])
    assert [(f.header.id, f.header.version_number, f.items) for f in cart.files] == [
        ("syn1", 2, [DownloadListItem("syn1", 2), DownloadListItem("syn1")])
    ]
    assert ("syn1", 2) in cart.described


@pytest.mark.parametrize(
    "manifest",
    [
        [],  # the cart changed between the reads: the manifest does not list it
        [_manifest_row("syn1", 2, 6)],  # the sizes disagree
        [_manifest_row("syn1", 2, 5, md5="")],  # no MD5 recorded
        [_manifest_row("syn1", 2, 5), _manifest_row("syn1", 3, 5)],  # two candidates
    ],
)
def test_join_leaves_what_the_manifest_does_not_say_to_its_bundle(manifest):
    cart = Cart()
    _join(cart, [_row("syn1", None, 5, "12")], manifest)
    assert [(f.header.id, f.header.version_number) for f in cart.files] == [("syn1", None)]
    assert cart.described == {}  # no facts: the pipeline takes the file's bundle (the MD5 check is never weakened)


def test_a_manifest_cell_of_unicode_digits_is_no_number():
    """'²' is a digit to str.isdigit and no number to int(): the row is left to its bundle (it raised ValueError)."""
    cart = Cart()
    manifest = [dict(_manifest_row("syn1", 1, 5), versionNumber="²"), dict(_manifest_row("syn2", 1, 5))]
    manifest[1]["dataFileSizeBytes"] = "²"
    _join(cart, [_row("syn1", None, 5, "11"), _row("syn2", 1, 5, "21")], manifest)
    assert [(f.header.id, f.header.version_number) for f in cart.files] == [("syn1", None), ("syn2", 1)]
    assert cart.described == {}


@pytest.mark.parametrize(
    "status, action, done",
    [
        (SyncStatus.DOWNLOADED, "download", True),
        (SyncStatus.SKIPPED, "skip", True),
        (SyncStatus.SKIPPED, "adopt", True),
        (SyncStatus.SKIPPED, "keep-local", False),  # the local file is not the remote's
        (SyncStatus.FAILED, "download", False),
    ],
)
def test_only_a_complete_verified_file_leaves_the_cart(status, action, done):
    result = FileResult("syn1", 1, Path("/x"), 1, None, status, action=action)
    assert _succeeded(result) is done
    assert _succeeded(None) is False


def test_a_file_its_bundle_resolved_never_takes_another_versions_result():
    """syn1 at version 1 and syn1 without a version (its current version, 2, whose manifest row records no MD5:
    its bundle resolves it): version 2 failed, so the versionless item must stay in the cart, whatever the order of
    the results (it once took the first result of its id: version 1's, a success)."""
    cart = Cart()
    manifest = [_manifest_row("syn1", 1, 3), _manifest_row("syn1", 2, 5, md5="")]
    _join(cart, [_row("syn1", 1, 3, "11"), _row("syn1", None, 5, "12")], manifest)
    assert [(f.header.id, f.header.version_number) for f in cart.files] == [("syn1", 1), ("syn1", None)]
    one = FileResult("syn1", 1, Path("/a"), 3, None, SyncStatus.DOWNLOADED, action="download")
    two = FileResult("syn1", 2, None, 5, None, SyncStatus.FAILED, action="download")
    for results in ([one, two], [two, one]):
        outcome = _outcomes(cart, results)
        assert outcome[("syn1", 1)] is one and outcome[("syn1", None)] is two
    assert not _succeeded(_outcomes(cart, [one]).get(("syn1", None)))  # (no result of its own: it stays)


def test_a_manifest_row_of_an_item_the_pages_did_not_show_says_so(tmp_path):
    """The manifest job listed an item the pages did not (added meanwhile): its row says it was not read, not that
    a filter left it out (none was given)."""
    cart = Cart(columns=["ID", "versionNumber", "dataFileSizeBytes", "dataFileMD5Hex", "contentType", "parentId"])
    manifest = [_manifest_row("syn1", 1, 3), _manifest_row("syn2", 1, 4)]
    _join(cart, [_row("syn1", 1, 3, "11")], manifest)
    one = FileResult("syn1", 1, tmp_path / "f.txt", 3, None, SyncStatus.DOWNLOADED, action="download")
    written = _write_manifest(cart, _outcomes(cart, [one]), tmp_path)
    with open(written, newline="", encoding="utf-8") as handle:
        rows = {row["ID"]: row for row in csv.DictReader(handle)}
    assert (rows["syn1"]["path"], rows["syn1"]["error"]) == (str(tmp_path / "f.txt"), "")
    assert (rows["syn2"]["path"], rows["syn2"]["error"]) == ("", NOT_READ)


def test_a_manifest_row_never_gives_the_path_of_a_local_file_that_is_not_the_carts(tmp_path):
    """keep.local kept a local file that differs: the item stays in the cart and its row gives no path (it gave
    that file's path with no error, as if the cart's file were there)."""
    cart = Cart(columns=["ID", "versionNumber", "dataFileSizeBytes", "dataFileMD5Hex", "contentType", "parentId"])
    _join(cart, [_row("syn1", 1, 3, "11")], [_manifest_row("syn1", 1, 3)])
    kept = FileResult("syn1", 1, tmp_path / "f.txt", 3, None, SyncStatus.SKIPPED, action="keep-local")
    written = _write_manifest(cart, _outcomes(cart, [kept]), tmp_path)
    with open(written, newline="", encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (
        row["path"] == ""
        and row["error"] == f"not downloaded: the local file {tmp_path / 'f.txt'} differs (keep-local)"
    )


def test_a_manifest_that_cannot_be_written_is_one_clear_error(tmp_path):
    """A folder in the way of manifest.csv: a LocalIOError naming it (an IsADirectoryError escaped), no temporary
    file left behind."""
    cart = Cart(columns=["ID", "versionNumber", "dataFileSizeBytes", "dataFileMD5Hex", "contentType", "parentId"])
    _join(cart, [_row("syn1", 1, 3, "11")], [_manifest_row("syn1", 1, 3)])
    (tmp_path / "manifest.csv").mkdir()
    with pytest.raises(LocalIOError, match="cannot write .*manifest.csv"):
        _write_manifest(cart, {}, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.csv"]


def test_a_row_the_manifest_did_not_describe_records_the_version_downloaded(tmp_path):
    """A versionless item the manifest did not list (added between the reads): its row in manifest.csv has the
    version its bundle resolved, so that ``get --from-file manifest.csv`` replays that version (it was empty)."""
    cart = Cart(columns=["ID", "name", "versionNumber"])
    _join(cart, [_row("syn1", None, 3, "11")], [])
    got = FileResult("syn1", 4, tmp_path / "f.txt", 3, None, SyncStatus.DOWNLOADED, action="download")
    written = _write_manifest(cart, _outcomes(cart, [got]), tmp_path)
    with open(written, newline="", encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["ID"], row["versionNumber"], row["path"]) == ("syn1", "4", str(tmp_path / "f.txt"))


def test_the_action_line():
    assert CartInfo(files=0).action_line() is None
    info = CartInfo(files=2, needing_action=3, actions=["access requirement 9", "download access to syn5"])
    assert info.action_line() == (
        "3 files in your download cart need an action on synapse.org first "
        "(access requirement 9, download access to syn5)"
    )
    # Synapse's three actions (ActionsRequiredDao): each said in words, not by its concreteType
    two_fa = ActionRequired.from_wire(
        {"action": {"concreteType": PKG + "EnableTwoFa", "accessRequirementId": 7}, "count": 1}
    )
    assert _action_label(two_fa.kind, two_fa.target) == "two-factor authentication for access requirement 7"
    assert _action_label("MeetAccessRequirement", "9") == "access requirement 9"
    many = CartInfo(files=0, needing_action=1, actions=[f"access requirement {i}" for i in range(5)])
    assert many.action_line().startswith("1 file in your download cart needs an action")
    assert many.action_line().endswith("access requirement 2, ...)")


class _PagedCart:
    """A platform whose cart of ``total`` files pages as Synapse does (``{limit}a{offset}`` tokens), or not."""

    def __init__(self, total: int, *, limit: int = 50, lie_at: int = -1, opaque: bool = False, count: int = -1) -> None:
        self.total, self.limit, self.lie_at, self.opaque = total, limit, lie_at, opaque
        self.count = count if count >= 0 else total  # what the statistics job says
        self.asked: list = []
        self.counted = 0

    def download_list_available_count(self) -> int:
        self.counted += 1
        return self.count

    def download_list_page(self, *, page_token=None) -> DownloadListPage:
        self.asked.append(page_token)
        offset = int(page_token[1:] if page_token.startswith("o") else page_token.split("a")[1]) if page_token else 0
        rows = tuple(_row(f"syn{i}", None, 1, str(i)) for i in range(offset, min(self.total, offset + self.limit)))
        more = offset + self.limit < self.total
        token = (f"o{offset + self.limit}" if self.opaque else f"{self.limit}a{offset + self.limit}") if more else None
        if offset == self.lie_at:
            token = f"{self.limit}a{offset + 1}"
        return DownloadListPage(files=rows, next_page_token=token)

    def iter_download_list_pages(self, *, page_token=None):
        while page_token:
            page = self.download_list_page(page_token=page_token)
            yield page
            page_token = page.next_page_token

    def download_list_actions(self):
        return []


def test_later_pages_are_read_at_once_when_their_tokens_can_be_told():
    cart = _PagedCart(180)
    rows = _later_pages(cart, cart.download_list_page())
    assert [row.file_entity_id for row in rows] == [f"syn{i}" for i in range(50, 180)]
    assert sorted(cart.asked[1:]) == ["50a100", "50a150", "50a50"] and cart.counted == 1


@pytest.mark.parametrize(
    "cart",
    [_PagedCart(180, lie_at=100), _PagedCart(180, opaque=True)],
    ids=["a page not as told", "opaque tokens"],
)
def test_later_pages_otherwise_are_read_in_order(cart):
    assert _later_pages(cart, cart.download_list_page()) is None  # (read_cart then follows the tokens)
    assert cart.counted == (0 if cart.opaque else 1)


@pytest.mark.parametrize(
    "cart",
    [_PagedCart(180, count=10**6), _PagedCart(50_000, lie_at=100)],
    ids=["a count of far more files than the pages", "a big cart, a page early not as told"],
)
def test_a_page_not_as_told_wastes_at_most_a_few_pages(cart):
    """Pages are asked at most PAGES_AT_ONCE ahead of the last one found as told (they were all asked at once
    before: 20,000 jobs for a count of a million, a thousand for a 50,000-file cart whose second page moved)."""
    assert _later_pages(cart, cart.download_list_page()) is None
    assert len(cart.asked) <= 1 + 3 + 2 * PAGES_AT_ONCE


def test_a_first_page_of_no_file_with_pages_after_it_drops_no_file(monkeypatch):
    """A first page without rows but with a next token (the files came after it): every file is read and joined
    with the manifest (they were dropped: the manifest was only asked for when the first page showed a file)."""

    class EmptyFirst(_PagedCart):
        def download_list_page(self, *, page_token=None) -> DownloadListPage:
            if page_token is None:
                self.asked.append(None)
                return DownloadListPage(files=(), next_page_token="o0")
            return super().download_list_page(page_token=page_token)

    cart = EmptyFirst(60, opaque=True)
    header = "ID,versionNumber,dataFileSizeBytes,dataFileMD5Hex,contentType,parentId\n"
    csv_text = header + "".join(f"syn{i},1,1,{'0' * 32},text/plain,syn9\n" for i in range(60))
    monkeypatch.setattr("synclient.sync.sources.cart._manifest_bytes", lambda platform, client: csv_text.encode())
    read = read_cart(cart, data=object())
    assert [file.header.id for file in read.files] == [f"syn{i}" for i in range(60)]
    assert len(read.described) == 60 and read.columns[0] == "ID"


def test_files_needing_action_are_the_platforms_count_not_the_sum_of_the_actions(monkeypatch):
    """One file under two access requirements is one file that needs an action (Synapse's action counts are per
    action: summed, it was two); the count is asked only when some action is required."""
    cart = _PagedCart(3)
    two = [ActionRequired("MeetAccessRequirement", "9", 1), ActionRequired("MeetAccessRequirement", "10", 1)]
    asked = []
    monkeypatch.setattr(cart, "download_list_actions", lambda: two, raising=False)
    monkeypatch.setattr(cart, "download_list_requiring_action", lambda: asked.append(1) or 1, raising=False)
    header = "ID,versionNumber,dataFileSizeBytes,dataFileMD5Hex,contentType,parentId\n"
    csv_text = header + "".join(f"syn{i},1,1,{'0' * 32},text/plain,syn9\n" for i in range(3))
    monkeypatch.setattr("synclient.sync.sources.cart._manifest_bytes", lambda platform, client: csv_text.encode())
    read = read_cart(cart, data=object())
    assert read.files_needing_action == 1 and read.actions == two and asked == [1]
    none = _PagedCart(3)
    monkeypatch.setattr(none, "download_list_requiring_action", lambda: asked.append(2) or 0, raising=False)
    assert read_cart(none, data=object()).files_needing_action == 0 and asked == [1]  # (no action: not asked)


def test_read_cart_follows_tokens_it_cannot_tell(monkeypatch):
    """Opaque tokens: the pages are read one after another, each from the token before, and joined with the
    manifest as ever."""
    cart = _PagedCart(120, opaque=True)
    header = "ID,versionNumber,dataFileSizeBytes,dataFileMD5Hex,contentType,parentId\n"
    csv_text = header + "".join(f"syn{i},1,1,{'0' * 32},text/plain,syn9\n" for i in range(120))
    monkeypatch.setattr("synclient.sync.sources.cart._manifest_bytes", lambda platform, client: csv_text.encode())
    read = read_cart(cart, data=object())
    assert [file.header.id for file in read.files] == [f"syn{i}" for i in range(120)]
    assert cart.asked == [None, "o50", "o100"] and cart.counted == 0
    assert len(read.described) == 120 and read.columns[0] == "ID"
