"""Issue 30, items 3, 7, 8 and 17: the emulator's column, query, async-job and dataset answers held against
Synapse's own model (the conformance suite's checker and facts: tests/conformance/checker.py, synapse_model.py).
Every other fact names where it comes from in Sage-Bionetworks/Synapse-Repository-Services; ``SCHEMA/`` is
``lib/lib-auto-generated/src/main/resources/schema/org/sagebionetworks/repo/model/``.
"""

from __future__ import annotations

import hashlib
import re
from typing import Dict, List, Optional, Tuple

import pytest
from emuhelpers import Api

from tests.conformance.checker import check

TABLE_PKG = "org.sagebionetworks.repo.model.table."
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
FACET_MODEL = {"enumeration": TABLE_PKG + "FacetColumnResultValues", "range": TABLE_PKG + "FacetColumnResultRange"}


SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {
                    "type": "folder",
                    "name": "raw",
                    "children": [
                        {"type": "file", "name": "a.txt", "content": "A", "annotations": {"assay": "rnaSeq"}},
                        {"type": "file", "name": "b.txt", "content": "BB", "annotations": {"assay": "wgs"}},
                        {"type": "file", "name": "c.txt", "content": "CCC"},
                    ],
                },
                {"type": "entityview", "name": "v", "scope": ["raw"], "columns": ["assay"]},
                {
                    "type": "table",
                    "name": "t",
                    "columns": [{"name": "n", "type": "INTEGER"}, {"name": "s", "type": "STRING"}],
                    "rows": [[1, "x"], [2, None]],
                },
            ],
        }
    ]
}


@pytest.fixture
def conform(emulator_factory):
    """(api, path -> id) over SPEC, two rows per query page (so a next page exists)."""
    emu = emulator_factory(query_page_rows=2)
    project = emu.seed_spec(SPEC)["p"]
    return Api(emu), lambda path: emu.resolve(project, path)


def run_job(api, url: str, body: dict) -> Tuple[dict, dict, object]:
    """Start a job at ``url`` (``.../async``), GET it once (the 202) and again (the answer): (start answer, the
    202's job status, the final response)."""
    started = api.post(url + "/start", body)
    assert started.status_code == 201, started.text  # TableController: @ResponseStatus(HttpStatus.CREATED)
    assert check("AsyncJobId", started.json()) == []
    pending = api.get(f"{url}/get/{started.json()['token']}")
    assert pending.status_code == 202, pending.text  # BaseControllerExceptionHandlerAdvice: NotReadyException
    done = api.get(f"{url}/get/{started.json()['token']}")
    return started.json(), pending.json(), done


# --- item 8: ColumnModel and the query answers ----------------------------------------------------------
def test_column_models_have_no_concrete_type_and_conform(conform):
    api, ids = conform
    for entity in ("v", "t"):
        listed = api.get(f"/repo/v1/entity/{ids(entity)}/column").json()
        assert check("PaginatedColumnModels", listed) == []
        assert listed["results"] and all("concreteType" not in model for model in listed["results"])
        for model in listed["results"]:
            assert api.get(f"/repo/v1/column/{model['id']}").json() == model
            assert check("ColumnModel", model) == []


def test_query_bundle_result_and_next_page_conform(conform):
    api, ids = conform
    view = ids("v")
    base = f"/repo/v1/entity/{view}/table/query"
    request = {
        "concreteType": TABLE_PKG + "QueryBundleRequest",
        "entityId": view,
        "query": {"sql": f"SELECT * FROM {view}", "includeEntityEtag": True},
    }  # no partMask: every part
    _started, status, done = run_job(api, base + "/async", request)
    assert done.status_code == 201, done.text
    bundle = done.json()
    assert check("QueryResultBundle", bundle) == []
    # QueryOptions.withMask: no partMask is every part but actionsRequired (set only when a mask asks for it)
    assert set(bundle) == {
        "concreteType",
        "queryResult",
        "queryCount",
        "selectColumns",
        "maxRowsPerPage",
        "columnModels",
        "facets",
        "sumFileSizes",
        "lastUpdatedOn",
        "combinedSql",
    }
    assert all(facet["concreteType"] == FACET_MODEL[facet["facetType"]] for facet in bundle["facets"])
    assert all("concreteType" not in model for model in bundle["columnModels"])
    token = bundle["queryResult"]["nextPageToken"]
    assert set(token) == {"concreteType", "token"}
    _started, _status, page = run_job(api, base + "/nextPage/async", token)
    assert page.status_code == 201, page.text
    assert check("QueryResult", page.json()) == []
    aggregate = run_job(api, base + "/async", dict(request, query={"sql": f"SELECT COUNT(*) FROM {view}"}))[2]
    assert check("QueryResultBundle", aggregate.json()) == []  # a COUNT row: no rowId, no versionNumber


def test_a_full_page_names_a_next_page_even_when_no_row_remains(conform):
    """TableQueryManagerImpl: a next page token whenever the page holds maxRowsPerPage rows
    (isRowCountEqualToMaxRowsPerPage); the page after the last full one is empty and names none."""
    api, ids = conform
    table = ids("t")  # two rows, two rows per page
    base = f"/repo/v1/entity/{table}/table/query"
    first = run_job(api, base + "/async", {"query": {"sql": f"SELECT n FROM {table}"}})[2].json()
    assert len(first["queryResult"]["queryResults"]["rows"]) == 2
    token = first["queryResult"]["nextPageToken"]
    last = run_job(api, base + "/nextPage/async", token)[2].json()
    assert last["queryResults"]["rows"] == [] and "nextPageToken" not in last
    assert check("QueryResult", last) == []
    one = run_job(api, base + "/async", {"query": {"sql": f"SELECT n FROM {table} LIMIT 1"}})[2].json()
    assert "nextPageToken" not in one["queryResult"]


# --- query facets (BUNDLE_MASK_QUERY_FACETS) ----------------------------------------------------------------
FACETS = 0x20
FACET_SPEC = {
    "projects": [
        {
            "name": "fp",
            "children": [
                {
                    "type": "folder",
                    "name": "raw",
                    "children": [
                        {
                            "type": "file",
                            "name": "a.txt",
                            "content": "A",
                            "annotations": {"assay": "wgs", "score": 2.5},
                        },
                        {
                            "type": "file",
                            "name": "b.txt",
                            "content": "B",
                            "annotations": {"assay": "wgs", "score": -1.0},
                        },
                        {"type": "file", "name": "c.txt", "content": "C"},
                    ],
                },
                {
                    "type": "folder",
                    "name": "more",
                    "children": [
                        {
                            "type": "file",
                            "name": "d.txt",
                            "content": "D",
                            "annotations": {"assay": "rnaSeq", "score": 10.0},
                        },
                        {"type": "file", "name": "e.txt", "content": "E", "annotations": {"assay": "Amp"}},
                    ],
                },
                {
                    "type": "entityview",
                    "name": "v",
                    "scope": ["raw", "more"],
                    "columns": [
                        {"name": "assay", "facetType": "enumeration"},
                        "plain",
                        {"name": "score", "type": "DOUBLE", "facetType": "range"},
                    ],
                },
                {
                    "type": "table",
                    "name": "t",
                    "columns": [
                        {"name": "k", "facetType": "enumeration"},
                        {"name": "n", "type": "INTEGER", "facetType": "range"},
                    ],
                    "rows": [[f"v{i:03d}", None] for i in range(102)] + [["v050", None], ["V050", None]],
                },
            ],
        }
    ]
}


@pytest.fixture
def faceted(emulator_factory):
    emu = emulator_factory()
    project = emu.seed_spec(FACET_SPEC)["fp"]
    return Api(emu), lambda path: emu.resolve(project, path)


def _facets(api, table: str, sql: str, mask: Optional[int] = FACETS) -> List[dict]:
    body: Dict[str, object] = {"query": {"sql": sql}}
    if mask is not None:
        body["partMask"] = mask
    done = run_job(api, f"/repo/v1/entity/{table}/table/query/async", body)[2]
    assert done.status_code == 201, done.text
    bundle = done.json()
    assert check("QueryResultBundle", bundle) == []
    assert all(facet["concreteType"] == FACET_MODEL[facet["facetType"]] for facet in bundle["facets"])
    return bundle["facets"]


def _values(facet: dict) -> List[Tuple[str, int]]:
    assert not any(value["isSelected"] for value in facet["facetValues"])  # the emulator takes no selectedFacets
    return [(value["value"], value["count"]) for value in facet["facetValues"]]


def test_a_view_answers_a_facet_per_faceted_column_in_schema_order(faceted):
    """FacetModel: one result per faceted column of the table's schema (not of the select), in schema order;
    the default file columns facet createdOn, createdBy, type, parentId, projectId, modifiedOn, modifiedBy."""
    api, ids = faceted
    view = ids("v")
    facets = _facets(api, view, f"SELECT id FROM {view}")
    assert [(f["columnName"], f["facetType"]) for f in facets] == [
        ("createdOn", "range"),
        ("createdBy", "enumeration"),
        ("type", "enumeration"),
        ("parentId", "enumeration"),
        ("projectId", "enumeration"),
        ("modifiedOn", "range"),
        ("modifiedBy", "enumeration"),
        ("assay", "enumeration"),
        ("score", "range"),
    ]
    by_name = {f["columnName"]: f for f in facets}
    entity = api.get(f"/repo/v1/entity/{ids('raw/a.txt')}").json()
    assert _values(by_name["createdBy"]) == [(entity["createdBy"], 5)]
    assert _values(by_name["type"]) == [("file", 5)]
    assert _values(by_name["parentId"]) == [(ids("raw"), 3), (ids("more"), 2)]
    assert _values(by_name["projectId"]) == [(ids(""), 5)]
    # FacetTransformerValueCounts: ORDER BY frequency DESC, value ASC (NULL sorts first, text case-insensitively);
    # a row without a value counts under TableConstants.NULL_VALUE_KEYWORD
    assert _values(by_name["assay"]) == [
        ("wgs", 2),
        ("org.sagebionetworks.UNDEFINED_NULL_NOTSET", 1),
        ("Amp", 1),
        ("rnaSeq", 1),
    ]


def test_a_range_facet_is_the_min_and_max_as_strings(faceted):
    """FacetTransformerRange: SELECT MIN(col), MAX(col): the values as a RowSet writes them (a DATE in epoch
    milliseconds, a DOUBLE as a double), NULLs left out; no selectedMin/selectedMax without a selected range."""
    api, ids = faceted
    view = ids("v")
    rows = run_job(
        api,
        f"/repo/v1/entity/{view}/table/query/async",
        {"query": {"sql": f"SELECT createdOn FROM {view}"}, "partMask": 1},
    )[2].json()
    created = [int(row["values"][0]) for row in rows["queryResult"]["queryResults"]["rows"]]
    by_name = {f["columnName"]: f for f in _facets(api, view, f"SELECT * FROM {view}")}
    assert (by_name["createdOn"]["columnMin"], by_name["createdOn"]["columnMax"]) == (
        str(min(created)),
        str(max(created)),
    )
    assert by_name["score"] == {
        "concreteType": TABLE_PKG + "FacetColumnResultRange",
        "columnName": "score",
        "facetType": "range",
        "columnMin": "-1.0",
        "columnMax": "10.0",
    }


def test_facets_count_the_rows_of_the_query_filter_not_its_page(faceted):
    """The facet queries keep the query's WHERE and drop its ORDER BY / LIMIT / OFFSET (FacetTransformer*)."""
    api, ids = faceted
    view = ids("v")
    by_name = {
        f["columnName"]: f
        for f in _facets(
            api, view, f"SELECT id FROM {view} WHERE parentId = '{ids('raw')}' ORDER BY name DESC LIMIT 1 OFFSET 1"
        )
    }
    assert _values(by_name["parentId"]) == [(ids("raw"), 3)]
    assert _values(by_name["assay"]) == [("wgs", 2), ("org.sagebionetworks.UNDEFINED_NULL_NOTSET", 1)]
    assert (by_name["score"]["columnMin"], by_name["score"]["columnMax"]) == ("-1.0", "2.5")
    nothing = {f["columnName"]: f for f in _facets(api, view, f"SELECT id FROM {view} WHERE assay = 'none'")}
    assert nothing["assay"]["facetValues"] == []
    assert "columnMin" not in nothing["score"] and "columnMax" not in nothing["score"]


def test_an_enumeration_facet_holds_at_most_100_values_and_a_range_of_nulls_has_no_bounds(faceted):
    """FacetTransformerValueCounts.MAX_NUM_FACET_CATEGORIES = 100 (LIMIT 100 after the ordering)."""
    api, ids = faceted
    table = ids("t")
    k, n = _facets(api, table, f"SELECT n FROM {table}")
    values = _values(k)
    # utf8mb4_general_ci (ColumnTypeInfo): "V050" is "v050"; the group shows the first row's value
    assert len(values) == 100 and values[0] == ("v050", 3)
    assert values[1:] == [(f"v{i:03d}", 1) for i in range(102) if i != 50][:99]
    assert n == {"concreteType": TABLE_PKG + "FacetColumnResultRange", "columnName": "n", "facetType": "range"}


def test_facets_only_when_the_part_mask_asks_and_every_part_but_actions_without_one(faceted):
    """QueryOptions.withMask: a null partMask is every part but actionsRequired; a mask without 0x20: no facets."""
    api, ids = faceted
    table = ids("t")
    url = f"/repo/v1/entity/{table}/table/query/async"
    only = run_job(api, url, {"query": {"sql": f"SELECT * FROM {table}"}, "partMask": FACETS})[2].json()
    assert set(only) == {"concreteType", "facets"}
    without = run_job(api, url, {"query": {"sql": f"SELECT * FROM {table}"}, "partMask": 0x1FF & ~FACETS})[2].json()
    assert "facets" not in without and "actionsRequired" not in without and "queryResult" in without
    every = run_job(api, url, {"query": {"sql": f"SELECT * FROM {table}"}})[2].json()
    assert "facets" in every and "actionsRequired" not in every
    asked = run_job(api, url, {"query": {"sql": f"SELECT * FROM {table}"}, "partMask": 0x200})[2].json()
    assert asked == {"concreteType": TABLE_PKG + "QueryResultBundle", "actionsRequired": []}


def test_csv_download_result_conforms(conform):
    api, ids = conform
    table = ids("t")
    _started, _status, done = run_job(
        api,
        f"/repo/v1/entity/{table}/table/download/csv/async",
        {"concreteType": TABLE_PKG + "DownloadFromTableRequest", "sql": f"SELECT * FROM {table}", "entityId": table},
    )
    assert done.status_code == 201, done.text
    assert check("DownloadFromTableResult", done.json()) == []


# --- item 7: the async job statuses -------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["query", "nextPage", "csv"])
def test_a_job_answers_202_while_processing_then_201_and_keeps_answering(conform, kind):
    api, ids = conform
    view = ids("v")
    sql = f"SELECT id FROM {view}"
    if kind == "query":
        url, body = f"/repo/v1/entity/{view}/table/query/async", {"query": {"sql": sql}}
    elif kind == "csv":
        url, body = f"/repo/v1/entity/{view}/table/download/csv/async", {"sql": sql}
    else:
        first = run_job(api, f"/repo/v1/entity/{view}/table/query/async", {"query": {"sql": sql}})[2].json()
        url, body = f"/repo/v1/entity/{view}/table/query/nextPage/async", first["queryResult"]["nextPageToken"]
    started, status, done = run_job(api, url, body)
    assert check("AsynchronousJobStatus", status) == []
    assert (status["jobState"], status["jobId"], status["jobCanceling"]) == ("PROCESSING", started["token"], False)
    assert UUID.fullmatch(status["etag"])
    assert done.status_code == 201 and "jobState" not in done.json()
    again = api.get(f"{url}/get/{started['token']}")
    assert (again.status_code, again.json()) == (201, done.json())


def test_a_failed_job_answers_its_exception_status(conform):
    """AsynchJobUtils.throwExceptionIfFailed rethrows the job's exception: a bad query is an
    IllegalArgumentException, 400 (BaseControllerExceptionHandlerAdvice), not a FAILED job status."""
    api, ids = conform
    view = ids("v")
    failed = run_job(api, f"/repo/v1/entity/{view}/table/query/async", {"query": {"sql": f"SELECT nope FROM {view}"}})[
        2
    ]
    assert failed.status_code == 400 and "nope" in failed.json()["reason"]


# --- item 17: the 202 echoes the request as Synapse stored it -------------------------------------------
def test_the_job_status_echoes_the_request_model_not_the_raw_body(conform):
    """The request is parsed into its model and stored re-serialized (AsynchJobStatusUtils.createDBOFromDTO:
    concreteType set to the class when absent; only non-null model fields). ``isConsistent`` is a field of no
    model (SCHEMA/table/Query.json, QueryBundleRequest.json), so it is gone."""
    api, ids = conform
    view = ids("v")
    sent = {
        "entityId": view,
        "partMask": 0x1,
        "unknown": 1,
        "nothing": None,
        "query": {
            "sql": f"SELECT id FROM {view}",
            "isConsistent": True,
            "includeEntityEtag": False,
            "offset": None,
            "limit": 5,
            "extra": "x",
        },
    }
    _started, status, _done = run_job(api, f"/repo/v1/entity/{view}/table/query/async", sent)
    assert status["requestBody"] == {
        "concreteType": TABLE_PKG + "QueryBundleRequest",
        "entityId": view,
        "partMask": 1,
        "query": {"sql": f"SELECT id FROM {view}", "includeEntityEtag": False, "limit": 5},
    }

    token = run_job(api, f"/repo/v1/entity/{view}/table/query/async", {"query": {"sql": f"SELECT id FROM {view}"}})[
        2
    ].json()["queryResult"]["nextPageToken"]
    _started, status, _done = run_job(
        api, f"/repo/v1/entity/{view}/table/query/nextPage/async", {"token": token["token"], "isConsistent": True}
    )
    assert status["requestBody"] == {"concreteType": TABLE_PKG + "QueryNextPageToken", "token": token["token"]}

    _started, status, done = run_job(
        api,
        f"/repo/v1/entity/{view}/table/download/csv/async",
        {
            "sql": f"SELECT id FROM {view}",
            "writeHeader": True,
            "isConsistent": True,
            "includeEntityEtag": None,
            "csvTableDescriptor": {"separator": "\t", "bogus": 1},
        },
    )
    assert status["requestBody"] == {
        "concreteType": TABLE_PKG + "DownloadFromTableRequest",
        "sql": f"SELECT id FROM {view}",
        "writeHeader": True,
        "csvTableDescriptor": {"separator": "\t"},
    }
    assert done.status_code == 201


@pytest.mark.parametrize(
    "body,message",
    [
        ({"query": {"sql": "SELECT id FROM syn1", "limit": "5"}}, "QueryBundleRequest.query.limit must be an integer"),
        ({"query": {"sql": "SELECT id FROM syn1"}, "partMask": True}, "QueryBundleRequest.partMask must be an integer"),
        ({"query": "SELECT id FROM syn1"}, "QueryBundleRequest.query must be a JSON object"),
        ({"partMask": 1}, "QueryBundleRequest.query is required"),
    ],
)
def test_a_request_field_of_another_type_is_refused_at_start(conform, body, message):
    api, ids = conform
    answer = api.post(f"/repo/v1/entity/{ids('v')}/table/query/async/start", body)
    assert answer.status_code == 400 and message in answer.json()["reason"]


# --- item 3: a Dataset's count, size and checksum --------------------------------------------------------
def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


DATASET_SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {"type": "file", "name": "a.csv", "content": "aaa"},
                {"type": "file", "name": "b.csv", "content": "b"},
                {"type": "file", "name": "nomd5.csv", "external": True, "content": "zz", "record_md5": False},
                {
                    "type": "file",
                    "name": "neither.csv",
                    "external": True,
                    "content": "yyy",
                    "record_md5": False,
                    "record_size": False,
                },
                {"type": "file", "name": "nosize.csv", "external": True, "content": "q", "record_size": False},
                {"type": "dataset", "name": "ab", "items": [{"ref": "a.csv"}, {"ref": "b.csv"}]},
                {
                    "type": "dataset",
                    "name": "mixed",
                    "items": [{"ref": "a.csv"}, {"ref": "nomd5.csv"}, {"ref": "neither.csv"}, {"ref": "nosize.csv"}],
                },
                {"type": "dataset", "name": "no_md5s", "items": [{"ref": "nomd5.csv"}, {"ref": "neither.csv"}]},
                {"type": "dataset", "name": "empty"},
            ],
        }
    ]
}


@pytest.fixture
def datasets(emulator):
    project = emulator.seed_spec(DATASET_SPEC)["p"]
    api = Api(emulator)
    return lambda name: api.get(f"/repo/v1/entity/{emulator.resolve(project, name)}").json()


def test_dataset_checksum_is_the_md5_of_the_sorted_md5s_joined_with_no_separator(datasets):
    """lib/jdomodels/.../dbo/dao/NodeDAOImpl.java SELECT_FILE_SUMMARY_FOR_ID_AND_VERSION:
    ``MD5(GROUP_CONCAT(CONTENT_MD5 ORDER BY CONTENT_MD5 ASC SEPARATOR ''))``; SCHEMA/table/Dataset.json's example
    says the same (md5('5e089d2972794b6d'))."""
    dataset = datasets("ab")
    joined = "".join(sorted([_md5(b"aaa"), _md5(b"b")]))
    assert (dataset["count"], dataset["size"], dataset["checksum"]) == (2, 4, _md5(joined.encode()))


def test_dataset_files_without_an_md5_or_a_size_add_nothing_to_them(datasets):
    """GROUP_CONCAT and SUM skip NULLs; COUNT(*) counts every item joined to its file handle."""
    mixed = datasets("mixed")
    joined = "".join(sorted([_md5(b"aaa"), _md5(b"q")]))
    assert (mixed["count"], mixed["size"], mixed["checksum"]) == (4, 3 + 2, _md5(joined.encode()))


def test_a_dataset_without_any_md5_or_any_item_has_no_checksum(datasets):
    """GROUP_CONCAT over no value is NULL and MD5(NULL) is NULL: no checksum field (null fields are not written);
    with no item NodeDAOImpl.getFileSummary answers FileSummary(null, 0, 0)."""
    no_md5s = datasets("no_md5s")
    assert (no_md5s["count"], no_md5s["size"]) == (2, 2) and "checksum" not in no_md5s
    empty = datasets("empty")
    assert (empty["count"], empty["size"], empty["items"]) == (0, 0, []) and "checksum" not in empty
