"""Table queries on the wire (Platform.query_table: async jobs, 202 polls, pages) and reading their rows
(synclient.sync.sources.queries: ids, versions, what a file view's row says of its file)."""

import json

import pytest
import responses
from client_support import REPO, error

from synclient.errors import BadRequestError, CallCancelledError, ConfigError, MalformedAnswerError
from synclient.platform.models import QueryPage, QueryRow
from synclient.sync.sources.id_lists import EntityRef
from synclient.sync.sources.queries import looks_like_sql, select, table_of

QUERY = REPO + "/entity/syn9/table/query"
COLUMNS = ["id", "name", "currentVersion", "dataFileHandleId", "dataFileMD5Hex", "dataFileSizeBytes", "parentId"]
PROCESSING = {"jobState": "PROCESSING", "jobId": "7", "progressMessage": "", "progressCurrent": 0}


def row_set(rows, columns=COLUMNS):
    return {
        "concreteType": "org.sagebionetworks.repo.model.table.RowSet",
        "tableId": "syn9",
        "headers": [{"name": name, "columnType": "STRING"} for name in columns],
        "rows": [{"rowId": number, "versionNumber": version, "values": values} for number, version, values in rows],
    }


def result(rows, token=None, columns=COLUMNS):
    answer = {
        "concreteType": "org.sagebionetworks.repo.model.table.QueryResult",
        "queryResults": row_set(rows, columns),
    }
    if token:
        answer["nextPageToken"] = {
            "concreteType": "org.sagebionetworks.repo.model.table.QueryNextPageToken",
            "entityId": "syn9",
            "token": token,
        }
    return answer


def bundle(rows, token=None, columns=COLUMNS):
    return {
        "concreteType": "org.sagebionetworks.repo.model.table.QueryResultBundle",
        "queryResult": result(rows, token, columns),
    }


def file_row(number, version=1, handle="500", md5="0" * 32, size="12", parent="syn2"):
    return (number, version, [f"syn{number}", f"f{number}.txt", str(version), handle, md5, size, parent])


@pytest.fixture
def no_wait(platform, monkeypatch):
    waits = []
    monkeypatch.setattr(platform, "_sleep", waits.append)
    return waits


@responses.activate
def test_a_query_job_is_polled_through_202s_and_its_pages_followed(platform, no_wait):
    responses.add(responses.POST, QUERY + "/async/start", json={"token": "t1"}, status=201)
    responses.add(responses.GET, QUERY + "/async/get/t1", json=PROCESSING, status=202)
    responses.add(responses.GET, QUERY + "/async/get/t1", json=PROCESSING, status=202)
    responses.add(responses.GET, QUERY + "/async/get/t1", json=bundle([file_row(11)], token="p2"), status=201)
    responses.add(responses.POST, QUERY + "/nextPage/async/start", json={"token": "t2"}, status=201)
    responses.add(responses.GET, QUERY + "/nextPage/async/get/t2", json=result([file_row(12)]), status=201)
    pages = list(platform.query_table("syn9", "SELECT * FROM syn9"))
    assert [row.values[0] for page in pages for row in page.rows] == ["syn11", "syn12"]
    assert pages[0].columns == tuple(COLUMNS) and pages[0].rows[0] == QueryRow(11, 1, tuple(file_row(11)[2]))
    start = json.loads(responses.calls[0].request.body)
    assert start["query"]["sql"] == "SELECT * FROM syn9" and start["entityId"] == "syn9"
    assert start["concreteType"].endswith("QueryBundleRequest") and start["partMask"] & 0x1
    # the next page is asked with the token object the platform gave, as is
    assert json.loads(responses.calls[4].request.body) == bundle([], token="p2")["queryResult"]["nextPageToken"]
    assert no_wait == [0.1, 0.2]  # one wait per 202, doubling
    assert platform.stats.calls == 6


@responses.activate
def test_a_failed_query_is_one_clear_error(platform, no_wait):
    responses.add(responses.POST, QUERY + "/async/start", json={"token": "t1"}, status=201)
    responses.add(responses.GET, QUERY + "/async/get/t1", **error(400, "Column 'nope' does not exist"))
    with pytest.raises(BadRequestError, match="Column 'nope' does not exist"):
        list(platform.query_table("syn9", "SELECT nope FROM syn9"))
    responses.replace(
        responses.GET,
        QUERY + "/async/get/t1",
        json={"jobState": "FAILED", "errorMessage": "bad SQL", "errorDetails": "trace"},
    )
    with pytest.raises(BadRequestError, match="job failed: bad SQL"):
        list(platform.query_table("syn9", "SELECT nope FROM syn9"))


@pytest.mark.parametrize(
    "status,answer",
    [
        (200, bundle([file_row(11)])),  # a done job on Synapse is 201, never 200
        (204, None),
        (202, {"jobState": "COMPLETE", "jobId": "7"}),  # a 202 is always a running job's status
    ],
)
@responses.activate
def test_a_job_answer_of_an_unexpected_status_fails_loudly(platform, no_wait, status, answer):
    """Synapse's ``.../async/get/{token}`` answers 201 when done (TableController: @ResponseStatus(CREATED)) and
    202 while processing (BaseControllerExceptionHandlerAdvice: NotReadyException); nothing else is waited on or
    parsed as a result."""
    responses.add(responses.GET, REPO + "/entity/syn1/type", json={"id": "syn1", "name": "p", "type": "x"})
    platform.get_entity_header("syn1")  # a proven endpoint: a malformed answer is not an endpoint error
    responses.add(responses.POST, QUERY + "/async/start", json={"token": "t1"}, status=201)
    responses.add(responses.GET, QUERY + "/async/get/t1", json=answer, status=status)
    with pytest.raises(MalformedAnswerError, match=f"HTTP {status}|not PROCESSING|job's answer"):
        list(platform.query_table("syn9", "SELECT id FROM syn9"))
    assert no_wait == []


@responses.activate
def test_the_query_request_holds_only_fields_of_its_model(platform, no_wait):
    """QueryBundleRequest / Query (lib-auto-generated .../repo/model/table/QueryBundleRequest.json, Query.json)
    have no ``isConsistent``."""
    responses.add(responses.POST, QUERY + "/async/start", json={"token": "t1"}, status=201)
    responses.add(responses.GET, QUERY + "/async/get/t1", json=bundle([file_row(11)]), status=201)
    list(platform.query_table("syn9", "SELECT * FROM syn9"))
    start = json.loads(responses.calls[0].request.body)
    assert set(start) == {"concreteType", "entityId", "partMask", "query"}
    assert set(start["query"]) <= {"sql", "includeEntityEtag", "offset", "limit"}


@responses.activate
def test_a_cancelled_run_stops_waiting_for_its_query(platform, monkeypatch):
    responses.add(responses.POST, QUERY + "/async/start", json={"token": "t1"}, status=201)
    responses.add(responses.GET, QUERY + "/async/get/t1", json=PROCESSING, status=202)
    monkeypatch.setattr(platform, "_sleep", lambda seconds: platform.cancel_event.set())
    with pytest.raises(CallCancelledError):
        list(platform.query_table("syn9", "SELECT id FROM syn9"))


@pytest.mark.parametrize("answer", [{"token": "../x"}, {"nothing": 1}])
@responses.activate
def test_a_job_token_that_is_not_one_is_a_malformed_answer(platform, answer, no_wait):
    responses.add(responses.GET, REPO + "/entity/syn1/type", json={"id": "syn1", "name": "p", "type": "x"})
    platform.get_entity_header("syn1")
    responses.add(responses.POST, QUERY + "/async/start", json=answer, status=201)
    with pytest.raises(MalformedAnswerError):
        list(platform.query_table("syn9", "SELECT id FROM syn9"))


def test_rows_whose_values_do_not_fit_the_columns_are_malformed():
    broken = bundle([(1, 1, ["syn1"])])
    with pytest.raises(MalformedAnswerError, match="1 values for 7 columns"):
        QueryPage.from_bundle(broken)


class FakePlatform:
    def __init__(self, *pages):
        self.pages = pages

    def query_table(self, table_id, sql):
        return iter(self.pages)


def page(rows, columns=COLUMNS):
    return QueryPage.from_result(result(rows, columns=columns))


def test_the_id_column_names_the_entities_and_a_version_column_pins_them():
    selection = select(
        FakePlatform(page([file_row(11, 3)]), page([file_row(12), (13, 1, [None] * 7)])),
        "SELECT * FROM syn9",
        table_id="syn9",
    )
    assert selection.refs == [EntityRef("syn11", 3), EntityRef("syn12", 1)]
    assert (selection.rows, selection.rows_without_id) == (3, 1)
    plain = select(FakePlatform(page([(5, 2, ["syn5.4"]), (6, 1, ["6"])], columns=["ID"])), "q", table_id="syn9")
    assert plain.refs == [EntityRef("syn5", 4), EntityRef("syn6", None)] and not plain.row_files


def test_a_view_row_stands_for_a_bundle_only_at_the_version_it_describes():
    rows = [file_row(11, 2, handle="71", md5="a" * 32, size="5"), file_row(12, 1, md5=None)]
    selection = select(FakePlatform(page(rows)), "q", table_id="syn9")
    known = selection.row_files  # keyed by (id, the version the row describes): the pipeline looks a file up so
    assert list(known) == [("syn11", 2)]  # syn12's row has no MD5: it takes its bundle call
    assert known["syn11", 2].handle.id == "71" and known["syn11", 2].handle.content_size == 5
    assert known["syn11", 2].parent_id == "syn2"
    # the view lags: syn11 is at version 3 now, so its row (version 2) says nothing of the file fetched
    assert ("syn11", 3) not in selection.row_files


@pytest.mark.parametrize("columns,message", [(["name"], "selects no 'id' column"), ([], "columns: none")])
def test_a_query_without_an_id_column_is_a_usage_error(columns, message):
    with pytest.raises(ConfigError, match=message):
        select(FakePlatform(page([], columns=columns)), "SELECT name FROM syn9", table_id="syn9")


def test_an_id_cell_that_is_no_id_names_its_row():
    with pytest.raises(ConfigError, match="row 2 of the query: 'folder/a' in its 'id' column"):
        select(FakePlatform(page([(1, 1, ["syn1"]), (2, 1, ["folder/a"])], columns=["id"])), "q", table_id="syn9")


def test_queries_are_told_from_ids_and_name_their_table():
    assert looks_like_sql("  select id from syn1") and looks_like_sql("SELECT\tid FROM syn1")
    assert not looks_like_sql("syn123") and not looks_like_sql("selection.csv")
    assert table_of('SELECT "my id" FROM SYN123.4 WHERE x = 1') == "syn123"
    with pytest.raises(ConfigError, match="SELECT id FROM syn123"):
        table_of("SELECT id FROM my_table")


def test_a_row_whose_handle_is_not_platform_storage_takes_the_bundle():
    columns = COLUMNS + ["dataFileConcreteType"]
    rows = [
        (11, 1, file_row(11)[2] + ["org.sagebionetworks.repo.model.file.S3FileHandle"]),
        (12, 1, file_row(12)[2] + ["org.sagebionetworks.repo.model.file.ExternalFileHandle"]),
        (13, 1, file_row(13)[2] + [None]),
    ]
    selection = select(FakePlatform(page(rows, columns=columns)), "q", table_id="syn9")
    assert sorted(selection.row_files) == [("syn11", 1), ("syn13", 1)]


def test_a_rows_annotation_columns_are_its_files_annotations():
    answer = result(
        [(11, 1, ["syn11", "5", "a" * 32, "7", "rnaSeq", '["a", "b"]', "12", None])],
        columns=["id", "dataFileHandleId", "dataFileMD5Hex", "dataFileSizeBytes", "assay", "tags", "age", "empty"],
    )
    types = {"tags": "STRING_LIST", "age": "INTEGER"}
    for column in answer["queryResults"]["headers"]:
        column["columnType"] = types.get(column["name"], "STRING")
    selection = select(FakePlatform(QueryPage.from_result(answer)), "q", table_id="syn9")
    known = selection.row_files["syn11", 1]
    assert known.annotations == {
        "assay": {"type": "STRING", "value": ["rnaSeq"]},
        "tags": {"type": "STRING", "value": ["a", "b"]},
        "age": {"type": "LONG", "value": ["12"]},
    }
    assert known.from_row and known.parent_id is None
