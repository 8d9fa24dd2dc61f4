"""The wire boundary validates (issue 29): every ``from_wire`` checks types, ranges and id shapes and raises a
MalformedAnswerError naming the field; a bad answer fails its call (its entity) alone; a pager stops on a repeated
page token or an empty page that names a next one; entity ids are canonical from the moment they are parsed."""

import json

import pytest
import responses
from client_support import REPO, prove

from synclient.errors import ConfigError, IntegrityError, MalformedAnswerError
from synclient.platform.models import (
    WIRE_MAX,
    ChildrenPage,
    Entity,
    EntityHeader,
    FileBundle,
    FileHandle,
    PageTrail,
    PresignedUrlAnswer,
    QueryPage,
    parse_entity_id,
)
from synclient.sync.sources.id_lists import EntityRef, ids_from_text, parse_refs
from synclient.sync.sources.queries import select, table_of

FILE_ENTITY = "org.sagebionetworks.repo.model.FileEntity"
HANDLE = {
    "id": "10",
    "contentSize": 42,
    "contentMd5": "0123456789abcdef" * 2,
    "fileName": "a.txt",
    "concreteType": "org.sagebionetworks.repo.model.file.S3FileHandle",
}
ENTITY = {
    "id": "syn2",
    "name": "a.txt",
    "concreteType": FILE_ENTITY,
    "parentId": "syn1",
    "versionNumber": 3,
    "dataFileHandleId": "10",
}


def changed(base, **fields):
    answer = dict(base)
    answer.update(fields)
    return answer


# -- every from_wire: types, ranges, id shapes ---------------------------------------------------------------------


def test_well_formed_answers_are_kept_and_ids_made_canonical():
    handle = FileHandle.from_wire(changed(HANDLE, id=10, contentSize=WIRE_MAX))
    assert (handle.id, handle.content_size) == ("10", WIRE_MAX)
    assert FileHandle.from_wire(changed(HANDLE, contentSize=0, contentMd5=None)).content_md5 is None
    entity = Entity.from_wire(changed(ENTITY, id="SYN002", parentId="syn0001"))
    assert (entity.id, entity.parent_id, entity.data_file_handle_id) == ("syn2", "syn1", "10")
    assert EntityHeader.from_wire({"id": "syn05", "name": "x", "versionNumber": 1}).id == "syn5"


@pytest.mark.parametrize(
    "field,value",
    [
        ("id", "../../../PWNED"),
        ("id", "12/34"),
        ("id", "\u00b2"),
        ("id", True),
        ("id", -1),
        ("id", 1.5),
        ("id", "9" * 20),
        ("contentSize", 1e20),
        ("contentSize", -1),
        ("contentSize", True),
        ("contentSize", 2**63),
        ("contentSize", "\u00b2"),
        ("contentSize", 1.5),
        ("contentSize", "12 "),
        ("contentSize", [1]),
        ("contentMd5", "xyz"),
        ("contentMd5", "g" * 32),
        ("contentMd5", 5),
        ("fileName", 7),
        ("concreteType", {}),
        ("externalURL", 3),
    ],
)
def test_a_file_handle_field_out_of_shape_is_a_malformed_answer_naming_it(field, value):
    with pytest.raises(MalformedAnswerError, match=repr(field)) as info:
        FileHandle.from_wire(changed(HANDLE, **{field: value}))
    assert "\n" not in str(info.value) and len(str(info.value)) < 200


@pytest.mark.parametrize(
    "field,value",
    [
        ("id", "syn1/../x"),
        ("id", "123"),
        ("id", "syn\u00b2"),
        ("id", 5),
        ("name", 5),
        ("name", ["a"]),
        ("parentId", "../x"),
        ("versionNumber", 0),
        ("versionNumber", True),
        ("versionNumber", 2.5),
        ("dataFileHandleId", "../../../PWNED"),
        ("dataFileHandleId", "1e3"),
        ("concreteType", 5),
    ],
)
def test_an_entity_field_out_of_shape_is_a_malformed_answer_naming_it(field, value):
    with pytest.raises(MalformedAnswerError, match=repr(field)):
        Entity.from_wire(changed(ENTITY, **{field: value}))


@pytest.mark.parametrize(
    "links,field",
    [({"targetId": "x/y"}, "targetId"), ({"targetId": "syn3", "targetVersionNumber": -2}, "targetVersionNumber")],
)
def test_a_links_target_out_of_shape_is_a_malformed_answer(links, field):
    with pytest.raises(MalformedAnswerError, match=field):
        Entity.from_wire(changed(ENTITY, linksTo=links))


@pytest.mark.parametrize(
    "item,field", [({"entityId": "../x"}, "entityId"), ({"entityId": "syn3", "versionNumber": "two"}, "versionNumber")]
)
def test_a_dataset_item_out_of_shape_is_a_malformed_answer(item, field):
    with pytest.raises(MalformedAnswerError, match=field):
        Entity.from_wire(changed(ENTITY, items=[item]))


@pytest.mark.parametrize(
    "field,value", [("id", "x"), ("name", None), ("name", 3), ("versionNumber", 0), ("type", 3), ("modifiedOn", 3)]
)
def test_an_entity_header_field_out_of_shape_is_a_malformed_answer(field, value):
    with pytest.raises(MalformedAnswerError, match=repr(field)):
        EntityHeader.from_wire(changed({"id": "syn1", "name": "n"}, **{field: value}))


def test_a_bad_child_fails_its_children_page_naming_the_child():
    page = {"page": [{"id": "syn1", "name": "a"}, {"id": "../x", "name": "b"}], "nextPageToken": "t"}
    with pytest.raises(MalformedAnswerError, match=r"child 2 of the page \('\.\./x'\).*'id'"):
        ChildrenPage.from_wire(page)
    with pytest.raises(MalformedAnswerError, match="nextPageToken"):
        ChildrenPage.from_wire({"page": [], "nextPageToken": 5})


@pytest.mark.parametrize("total,read", [(120, 120), (None, None), (-1, None), ("lots", None), (1.5, None)])
def test_a_children_pages_sum_of_sizes_out_of_shape_is_no_sum_not_a_failed_page(total, read):
    page = ChildrenPage.from_wire({"page": [{"id": "syn1", "name": "a"}], "sumFileSizesBytes": total})
    assert page.sum_file_sizes == read and [h.id for h in page.headers] == ["syn1"]


@pytest.mark.parametrize(
    "answer,field",
    [
        ({"entity": ENTITY, "fileHandles": [changed(HANDLE, id="../../../PWNED")]}, "'id'"),
        ({"entity": ENTITY, "fileHandles": [changed(HANDLE, contentSize=1e20)]}, "'contentSize'"),
        ({"entity": ENTITY, "fileHandles": [HANDLE], "annotations": ["a"]}, "annotations"),
        ({"entity": ENTITY, "fileHandles": [HANDLE], "annotations": {"annotations": "x"}}, "annotations"),
    ],
)
def test_a_bundle_with_a_bad_part_is_a_malformed_answer(answer, field):
    with pytest.raises(MalformedAnswerError, match=field):
        FileBundle.from_wire(answer)


def test_a_url_batch_row_that_names_its_handle_fails_that_handle_alone():
    answers = PresignedUrlAnswer.batch_from_wire(
        {
            "requestedFiles": [
                {"fileHandleId": "1", "preSignedURL": "https://data.test/1"},
                {"fileHandleId": "2", "preSignedURL": 42},
                {"fileHandleId": 3, "failureCode": ["x"]},
            ]
        }
    )
    assert answers["1"].url == "https://data.test/1" and answers["1"].failure_code is None
    assert answers["2"].url is None and "'preSignedURL'" in answers["2"].malformed
    assert "'failureCode'" in answers["3"].malformed
    # the broker turns such a row into that file's MalformedAnswerError, not tried again
    from synclient.platform.models import FileHandleRequest
    from synclient.transfer.urls import _answer_to_result

    url, error = _answer_to_result(answers["2"], FileHandleRequest(file_handle_id="2", entity_id="syn2"))
    assert url is None and isinstance(error, MalformedAnswerError) and not error.retryable
    assert "file handle 2 of syn2: malformed answer" in str(error)
    with pytest.raises(MalformedAnswerError, match="'fileHandleId'"):  # a row that names no handle: the batch
        PresignedUrlAnswer.batch_from_wire({"requestedFiles": [{"fileHandleId": "../1", "preSignedURL": "u"}]})


@pytest.mark.parametrize(
    "row,field",
    [
        ({"rowId": -1, "values": ["syn1"]}, "rowId"),
        ({"rowId": 1, "versionNumber": "\u00b2", "values": ["syn1"]}, "versionNumber"),
    ],
)
def test_a_query_row_out_of_shape_is_a_malformed_answer(row, field):
    result = {"queryResults": {"headers": [{"name": "id"}], "rows": [row]}}
    with pytest.raises(MalformedAnswerError, match=field):
        QueryPage.from_result(result)
    with pytest.raises(MalformedAnswerError, match="'name'"):
        QueryPage.from_result({"queryResults": {"headers": [{"name": 5}], "rows": []}})


# -- through the client: the call fails alone, with its route ---------------------------------------------------------


@responses.activate
@pytest.mark.parametrize("handle", [changed(HANDLE, id="../../../PWNED"), changed(HANDLE, contentSize=1e20)])
def test_a_hostile_bundle_is_a_malformed_answer_of_its_call(platform, handle):
    prove(platform)
    entity = changed(ENTITY, dataFileHandleId=handle["id"]) if handle["id"] != "10" else ENTITY
    responses.add(responses.POST, REPO + "/entity/syn2/bundle2", json={"entity": entity, "fileHandles": [handle]})
    with pytest.raises(MalformedAnswerError, match=r"POST /entity/\{id\}/bundle2: malformed answer") as info:
        platform.get_file_bundle("syn2")
    assert not info.value.retryable  # another try would get the same answer


@responses.activate
def test_a_malformed_row_of_a_header_batch_leaves_out_its_entity_alone(platform, caplog):
    prove(platform)
    responses.add(
        responses.POST,
        REPO + "/entity/header",
        json={
            "results": [
                {"id": "syn5", "name": "a", "type": FILE_ENTITY},
                {"id": "syn6", "name": 6, "type": FILE_ENTITY},
                {"id": "syn7", "name": "c", "type": FILE_ENTITY, "versionNumber": -1},
            ]
        },
    )
    headers = platform.get_entity_headers(["syn5", "syn6", "syn7"])
    assert list(headers) == ["syn5"]
    assert "'syn6'" in caplog.text and "'syn7'" in caplog.text and "malformed" in caplog.text


@responses.activate
def test_an_entity_path_is_its_chain_and_a_malformed_item_fails_the_call(platform):
    prove(platform)
    chain = [
        {"id": "syn4489", "name": "Redacted", "type": "org.sagebionetworks.repo.model.Folder"},
        {"id": "syn1", "name": "alpha", "type": "org.sagebionetworks.repo.model.Project"},
        {"id": "syn2", "name": "raw", "type": "org.sagebionetworks.repo.model.Folder"},
    ]
    responses.add(responses.GET, REPO + "/entity/syn2/path", json={"path": chain})
    assert [(h.id, h.name, h.type.label) for h in platform.get_entity_path("syn2")] == [
        ("syn4489", "Redacted", "folder"),
        ("syn1", "alpha", "project"),
        ("syn2", "raw", "folder"),
    ]
    responses.add(responses.GET, REPO + "/entity/syn3/path", json={"path": chain[:2] + [{"id": "syn3", "name": 3}]})
    with pytest.raises(MalformedAnswerError, match=r"GET /entity/\{id\}/path: malformed answer"):
        platform.get_entity_path("syn3")


# -- pagers: a repeated token or an empty page with a next one ends the listing ---------------------------------


def test_a_page_trail_follows_new_tokens_and_refuses_repeats_and_empty_pages():
    trail = PageTrail("the children of syn1")
    assert trail.follow("a", rows=2) == "a" and trail.follow({"token": "b"}, rows=1) == {"token": "b"}
    assert trail.follow(None, rows=0) is None
    with pytest.raises(MalformedAnswerError, match="repeats the next page token") as info:
        trail.follow("a", rows=5)
    assert not info.value.retryable
    with pytest.raises(MalformedAnswerError, match="no rows yet names a next page"):
        PageTrail("x").follow("c", rows=0)
    query = PageTrail("x")
    query.follow({"a": 1, "b": 2}, rows=1)
    # a query's tokens compare by content
    with pytest.raises(MalformedAnswerError, match="repeats the next page token"):
        query.follow({"b": 2, "a": 1}, rows=1)


@responses.activate
def test_children_answering_the_same_token_forever_end_with_a_malformed_answer(platform):
    prove(platform)
    responses.add(
        responses.POST,
        REPO + "/entity/children",
        json={"page": [{"id": "syn5", "name": "a", "type": FILE_ENTITY}], "nextPageToken": "same"},
    )
    with pytest.raises(MalformedAnswerError, match="the children of syn1: malformed answer: page 2 repeats"):
        list(platform.iter_children("syn1", include_types=[]))
    calls = [call for call in responses.calls if call.request.url.endswith("/entity/children")]
    assert len(calls) == 2 and json.loads(calls[1].request.body)["nextPageToken"] == "same"


@responses.activate
def test_children_answering_empty_pages_with_tokens_end_with_a_malformed_answer(platform):
    prove(platform)
    for number in range(5):
        responses.add(responses.POST, REPO + "/entity/children", json={"page": [], "nextPageToken": f"t{number}"})
    with pytest.raises(MalformedAnswerError, match="no rows"):
        list(platform.iter_children("syn1", include_types=[]))
    assert sum(call.request.url.endswith("/entity/children") for call in responses.calls) == 1


@responses.activate
def test_a_query_answering_the_same_token_forever_ends_with_a_malformed_answer(platform, monkeypatch):
    monkeypatch.setattr(platform, "_sleep", lambda seconds: None)
    query = REPO + "/entity/syn9/table/query"
    token = {"concreteType": "org.sagebionetworks.repo.model.table.QueryNextPageToken", "token": "same"}
    rows = {"headers": [{"name": "id"}], "rows": [{"rowId": 1, "versionNumber": 1, "values": ["syn1"]}]}
    responses.add(responses.POST, query + "/async/start", json={"token": "j1"}, status=201)
    responses.add(
        responses.GET,
        query + "/async/get/j1",
        json={"queryResult": {"queryResults": rows, "nextPageToken": token}},
        status=201,
    )
    responses.add(responses.POST, query + "/nextPage/async/start", json={"token": "j2"}, status=201)
    responses.add(
        responses.GET, query + "/nextPage/async/get/j2", json={"queryResults": rows, "nextPageToken": token}, status=201
    )
    with pytest.raises(MalformedAnswerError, match="the query of syn9: malformed answer: page 2"):
        list(platform.query_table("syn9", "SELECT id FROM syn9"))
    assert sum("/nextPage/async/start" in call.request.url for call in responses.calls) == 1


# -- entity ids are canonical from the moment they are parsed (defect 11) ---------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("syn0001000006", ("syn1000006", None)),
        ("SYN012.03", ("syn12", 3)),
        ("syn0", ("syn0", None)),
        ("syn00", ("syn0", None)),
    ],
)
def test_entity_ids_are_canonical_once_parsed(text, expected):
    assert parse_entity_id(text) == expected


def test_id_lists_and_queries_canonicalise_ids():
    assert parse_refs(["syn0001000006", "syn1000007"]) == [EntityRef("syn1000006"), EntityRef("syn1000007")]
    assert ids_from_text("syn007\nSYN08.2\n", where="f") == [EntityRef("syn7"), EntityRef("syn8", 2)]
    assert ids_from_text("id\tname\nsyn009\ta\n", where="f") == [EntityRef("syn9")]
    assert table_of("SELECT id FROM syn0042 WHERE x = 1") == "syn42"
    assert EntityRef("SYN007", 2) == EntityRef("syn7", 2) and str(EntityRef("syn0010")) == "syn10"
    with pytest.raises(ConfigError):
        EntityRef("syn7.2")


# -- query cells: ASCII digits only (defect 8) ------------------------------------------------------------------------


class _Pages:
    def __init__(self, *pages):
        self.pages = pages

    def query_table(self, table_id, sql):
        return iter(self.pages)


def _page(columns, *rows):
    return QueryPage.from_result(
        {
            "queryResults": {
                "headers": [{"name": name} for name in columns],
                "rows": [
                    {"rowId": number, "versionNumber": 1, "values": values}
                    for number, values in enumerate(rows, start=1)
                ],
            }
        }
    )


@pytest.mark.parametrize("cell", ["\u00b2", "\u0661\u0662", "\uff11", "1\u00b2"])
def test_a_unicode_digit_in_a_version_cell_is_one_line_naming_its_row(cell):
    page = _page(["id", "currentVersion"], ["syn1", "1"], ["syn2", cell])
    with pytest.raises(ConfigError, match=r"row 2 of the query: .* in its 'currentVersion' column is not a version"):
        select(_Pages(page), "SELECT id, currentVersion FROM syn9", table_id="syn9")


@pytest.mark.parametrize("cell", ["\u00b2", "\u0661\u0662"])
def test_a_unicode_digit_in_an_id_cell_is_one_line_naming_its_row(cell):
    with pytest.raises(ConfigError, match=r"row 1 of the query: .* in its 'id' column is not a platform id"):
        select(_Pages(_page(["id"], [cell])), "SELECT id FROM syn9", table_id="syn9")


@pytest.mark.parametrize(
    "handle,size,md5",
    [
        ("\u00b2", "5", "a" * 32),
        ("71", "\u00b2", "a" * 32),
        ("../../x", "5", "a" * 32),
        ("71", "1" * 25, "a" * 32),
        ("71", "5", "not-an-md5"),
    ],
)
def test_a_view_row_whose_handle_cells_are_out_of_shape_leaves_its_file_to_the_bundle(handle, size, md5):
    columns = ["id", "currentVersion", "dataFileHandleId", "dataFileMD5Hex", "dataFileSizeBytes"]
    selection = select(
        _Pages(_page(columns, ["syn1", "1", handle, md5, size], ["syn2", "1", "72", "b" * 32, "6"])),
        "SELECT * FROM syn9",
        table_id="syn9",
    )
    assert selection.refs == [EntityRef("syn1", 1), EntityRef("syn2", 1)]
    assert list(selection.row_files) == [("syn2", 1)]  # syn1 takes its bundle call, which is checked itself


def test_a_content_length_of_unicode_digits_is_no_internal_error():
    """A hostile data server's ``Content-Length: ²`` (valid latin-1, ``str.isdigit`` is true, ``int`` refuses it)
    is a length nobody announced, not a ValueError out of the data plane."""
    from synclient.transfer.http import ByteRange, _check_length

    _check_length({"Content-Length": "\u00b2"}, ByteRange(0, 10, 10), "GET x")  # ignored, as a missing one is
    with pytest.raises(IntegrityError):
        _check_length({"Content-Length": "9"}, ByteRange(0, 10, 10), "GET x")


@pytest.mark.parametrize("parent", ["../../x", "syn1/../2", "\u00b2", "syn"])
def test_a_view_row_whose_parent_cell_is_out_of_shape_leaves_its_file_to_the_bundle(parent):
    """A parentId cell names a folder: --keep-paths asks GET /entity/{parent}/path of it, and the index records it;
    one that is no entity id is as a bad handle cell (the file's bundle says its parent, checked itself)."""
    columns = ["id", "currentVersion", "parentId", "dataFileHandleId", "dataFileMD5Hex", "dataFileSizeBytes"]
    rows = [["syn1", "1", parent, "71", "a" * 32, "5"], ["syn2", "1", "SYN007", "72", "b" * 32, "6"]]
    selection = select(
        _Pages(_page(columns, *rows)),
        "SELECT * FROM syn9",
        table_id="syn9",
    )
    assert list(selection.row_files) == [("syn2", 1)]
    assert selection.row_files[("syn2", 1)].parent_id == "syn7"  # (canonical, as every id parsed)
