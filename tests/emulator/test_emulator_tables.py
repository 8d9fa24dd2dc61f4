"""Entity views, tables and the table query service on the wire: entity JSON, column models, the async job
sequence (201 token, 202 PROCESSING, 201 result), paging, partMask parts, the SQL subset and what it rejects,
the lagging-view knob and CSV downloads."""

from __future__ import annotations

import csv
import hashlib
import io

import pytest
import requests
from emuhelpers import Api, assert_spec_node_refused

from synclient.emulator.tables import DEFAULT_COLUMN_NAMES

VIEW = "org.sagebionetworks.repo.model.table.EntityView"
TABLE = "org.sagebionetworks.repo.model.table.TableEntity"
BUNDLE_REQUEST = "org.sagebionetworks.repo.model.table.QueryBundleRequest"

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {
                    "type": "folder",
                    "name": "raw",
                    "children": [
                        {
                            "type": "file",
                            "name": "a.txt",
                            "content": "A",
                            "annotations": {"assay": "rnaSeq", "age": 30},
                        },
                        {"type": "file", "name": "b.txt", "content": "BB", "annotations": {"assay": "wgs", "age": 40}},
                        {
                            "type": "folder",
                            "name": "deep",
                            "children": [
                                {
                                    "type": "file",
                                    "name": "c.txt",
                                    "content": "CCC",
                                    "annotations": {"assay": "rnaSeq", "age": 50},
                                }
                            ],
                        },
                        {"type": "file", "name": "hidden.txt", "content": "H", "deny": True},
                    ],
                },
                {
                    "type": "folder",
                    "name": "other",
                    "children": [
                        {
                            "type": "file",
                            "name": "d.txt",
                            "versions": [{"content": "d1"}, {"content": "d22"}],
                            "annotations": {"assay": "it's quoted"},
                        },
                        {"type": "file", "name": "e.txt", "content": "EEEEE"},
                    ],
                },
                {"type": "file", "name": "top.txt", "content": "T"},
                {
                    "type": "entityview",
                    "name": "v",
                    "scope": ["raw", "other"],
                    "columns": ["assay", {"name": "age", "type": "INTEGER"}],
                },
                {"type": "entityview", "name": "whole", "scope": [""]},
                {
                    "type": "table",
                    "name": "t",
                    "columns": [
                        {"name": "file", "type": "ENTITYID"},
                        {"name": "fh", "type": "FILEHANDLEID"},
                        {"name": "note", "type": "STRING", "maximumSize": 100},
                        {"name": "n", "type": "INTEGER"},
                        {"name": "ok", "type": "BOOLEAN"},
                        {"name": "x", "type": "DOUBLE"},
                    ],
                    "rows": [
                        ["raw/a.txt", "raw/a.txt", "first", 1, True, 1.5],
                        [["other", "d.txt"], "other/d.txt", 'say "hi", then go', 2, False, None],
                        [None, None, None, None, None, None],
                    ],
                },
            ],
        }
    ]
}


@pytest.fixture
def tables(emulator):
    """(emulator, api, path -> id)."""
    project = emulator.seed_spec(SPEC)["p"]
    return emulator, Api(emulator), lambda path: emulator.resolve(project, path)


def start(api, entity_id, sql, part_mask=None, **query):
    body = {"concreteType": BUNDLE_REQUEST, "entityId": entity_id, "query": dict(query, sql=sql)}
    if part_mask is not None:
        body["partMask"] = part_mask
    answer = api.post(f"/repo/v1/entity/{entity_id}/table/query/async/start", body)
    assert answer.status_code == 201, answer.text
    assert set(answer.json()) == {"token"}
    return answer.json()["token"]


def finish(api, path, polls=1):
    """GET the job ``polls`` times expecting 202, then once more: that answer."""
    for _ in range(polls):
        pending = api.get(path)
        assert pending.status_code == 202, pending.text
        assert pending.json()["jobState"] == "PROCESSING"
    return api.get(path)


def query(api, entity_id, sql, part_mask=0x1 | 0x4, **fields):
    token = start(api, entity_id, sql, part_mask, **fields)
    answer = finish(api, f"/repo/v1/entity/{entity_id}/table/query/async/get/{token}")
    assert answer.status_code == 201, answer.text
    return answer.json()


def values(bundle):
    return [row["values"] for row in bundle["queryResult"]["queryResults"]["rows"]]


def failure(api, entity_id, sql):
    token = start(api, entity_id, sql)
    answer = finish(api, f"/repo/v1/entity/{entity_id}/table/query/async/get/{token}")
    assert answer.status_code == 400, answer.text
    assert answer.json()["concreteType"] == "org.sagebionetworks.repo.model.ErrorResponse"
    return answer.json()["reason"]


# --- entities and columns -------------------------------------------------------------------------
def test_view_and_table_json(tables):
    emu, api, ids = tables
    view = api.get(f"/repo/v1/entity/{ids('v')}").json()
    assert view["concreteType"] == VIEW
    assert view["scopeIds"] == [ids("raw")[3:], ids("other")[3:]]
    assert (view["viewTypeMask"], view["versionLabel"], view["isLatestVersion"]) == (1, "in progress", True)
    assert len(view["columnIds"]) == len(DEFAULT_COLUMN_NAMES) + 2
    table = api.get(f"/repo/v1/entity/{ids('t')}").json()
    assert table["concreteType"] == TABLE and len(table["columnIds"]) == 6 and "scopeIds" not in table
    bundle = api.post(f"/repo/v1/entity/{ids('v')}/bundle2", {"includeEntity": True}).json()
    assert (bundle["entityType"], bundle["entity"]) == ("entityview", view)
    assert api.post(f"/repo/v1/entity/{ids('t')}/bundle2", {"includeEntity": True}).json()["entityType"] == "table"
    headers = api.post("/repo/v1/entity/header", {"references": [{"targetId": ids("v")}, {"targetId": ids("t")}]})
    assert [h["type"] for h in headers.json()["results"]] == [VIEW, TABLE]
    children = api.post(
        "/repo/v1/entity/children", {"parentId": emu.info()["projects"]["p"], "includeTypes": ["entityview", "table"]}
    ).json()
    assert [h["name"] for h in children["page"]] == ["t", "v", "whole"]
    # Synapse skips a table type's current, "in progress" version (NodeManagerImpl.getVersionsOfEntity): no snapshots
    assert api.get(f"/repo/v1/entity/{ids('v')}/version").json()["results"] == []


def test_column_models(tables):
    emu, api, ids = tables
    listed = api.get(f"/repo/v1/entity/{ids('v')}/column").json()
    names = [model["name"] for model in listed["results"]]
    assert names == list(DEFAULT_COLUMN_NAMES) + ["assay", "age"]
    assert listed["totalNumberOfResults"] == len(names)
    by_name = {model["name"]: model for model in listed["results"]}
    assert by_name["name"] == {"name": "name", "columnType": "STRING", "maximumSize": 256, "id": by_name["name"]["id"]}
    assert (by_name["id"]["columnType"], by_name["createdOn"]["facetType"]) == ("ENTITYID", "range")
    assert (by_name["assay"]["maximumSize"], by_name["age"]["columnType"]) == (50, "INTEGER")
    assert api.get(f"/repo/v1/column/{by_name['age']['id']}").json() == by_name["age"]
    assert api.get("/repo/v1/column/99999999").status_code == 404
    # an identical column model is one model: both views share the default columns' ids
    whole = api.get(f"/repo/v1/entity/{ids('whole')}").json()["columnIds"]
    assert whole == [by_name[name]["id"] for name in DEFAULT_COLUMN_NAMES]
    assert api.get(f"/repo/v1/entity/{ids('raw')}/column").status_code == 400


# --- the job sequence -----------------------------------------------------------------------------
def test_start_poll_result_and_unknown_tokens(tables):
    emu, api, ids = tables
    view = ids("v")
    token = start(api, view, f"SELECT id FROM {view}")
    path = f"/repo/v1/entity/{view}/table/query/async/get/{token}"
    pending = api.get(path)
    assert pending.status_code == 202
    status = pending.json()
    assert (status["jobState"], status["jobId"]) == ("PROCESSING", token)
    assert status["requestBody"]["query"]["sql"] == f"SELECT id FROM {view}"
    assert {"startedOn", "changedOn", "progressMessage", "progressCurrent", "progressTotal"} <= set(status)
    done = api.get(path)
    assert done.status_code == 201 and "jobState" not in done.json()
    assert api.get(path).json() == done.json()  # a finished job keeps answering its result
    assert api.get(f"/repo/v1/entity/{view}/table/query/async/get/424242").status_code == 404
    # a token of another kind of job is unknown to this route
    assert api.get(f"/repo/v1/entity/{view}/table/download/csv/async/get/{token}").status_code == 404
    assert api.post(f"/repo/v1/entity/{view}/table/query/async/start", {"query": {}}).status_code == 400
    assert api.post(f"/repo/v1/entity/{view}/table/query/async/start", {"query": {"sql": "  "}}).status_code == 400
    assert (
        api.post(
            f"/repo/v1/entity/{view}/table/query/async/start",
            {"concreteType": "x.Other", "query": {"sql": "SELECT id FROM syn1"}},
        ).status_code
        == 400
    )
    assert (
        Api(emu, token="wrong")
        .post(f"/repo/v1/entity/{view}/table/query/async/start", {"query": {"sql": "x"}})
        .status_code
        == 401
    )


@pytest.mark.parametrize("polls", [0, 3])
def test_pending_polls_knob(emulator_factory, polls):
    emu = emulator_factory(query_pending_polls=polls)
    project = emu.seed_spec(SPEC)["p"]
    table = emu.resolve(project, "t")
    api = Api(emu)
    token = start(api, table, f"SELECT n FROM {table}")
    answer = finish(api, f"/repo/v1/entity/{table}/table/query/async/get/{token}", polls)
    assert answer.status_code == 201
    assert emu.stats()["api_by_status"]["202"] == polls if polls else "202" not in emu.stats()["api_by_status"]


def test_view_rows_are_the_readable_files_below_the_scope(tables):
    emu, api, ids = tables
    view = ids("v")
    bundle = query(api, view, f"SELECT * FROM {view}", includeEntityEtag=True)
    rows = bundle["queryResult"]["queryResults"]["rows"]
    headers = [h["name"] for h in bundle["queryResult"]["queryResults"]["headers"]]
    assert headers == list(DEFAULT_COLUMN_NAMES) + ["assay", "age"]
    named = {row["values"][1]: dict(zip(headers, row["values"])) for row in rows}
    assert set(named) == {"a.txt", "b.txt", "c.txt", "d.txt", "e.txt"}  # deep files too, no hidden, no top
    d = named["d.txt"]
    d_entity = api.get(f"/repo/v1/entity/{ids('other/d.txt')}").json()
    assert (d["id"], d["currentVersion"], d["parentId"]) == (ids("other/d.txt"), "2", ids("other"))
    assert (d["dataFileHandleId"], d["dataFileSizeBytes"]) == (d_entity["dataFileHandleId"], "3")
    assert d["dataFileMD5Hex"] == hashlib.md5(b"d22").hexdigest()
    assert (d["etag"], d["type"], d["assay"], d["age"]) == (d_entity["etag"], "file", "it's quoted", None)
    assert d["projectId"] == d["benefactorId"] == emu.info()["projects"]["p"]
    assert d["createdOn"].isdigit() and d["createdBy"] == d_entity["createdBy"]
    row = next(r for r in rows if r["values"][1] == "d.txt")
    assert (row["rowId"], row["versionNumber"], row["etag"]) == (int(ids("other/d.txt")[3:]), 2, d_entity["etag"])
    assert all(row["rowId"] < later["rowId"] for row, later in zip(rows, rows[1:]))  # default order: row id
    whole = query(api, ids("whole"), f"SELECT name FROM {ids('whole')}")
    assert sorted(v[0] for v in values(whole)) == ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "top.txt"]
    no_etag = query(api, view, f"SELECT id FROM {view}")
    assert "etag" not in no_etag["queryResult"]["queryResults"]["rows"][0]


def test_table_rows_and_values(tables):
    emu, api, ids = tables
    table = ids("t")
    bundle = query(api, table, f"SELECT * FROM {table}", includeEntityEtag=True)
    rows = bundle["queryResult"]["queryResults"]["rows"]
    a_handle = api.get(f"/repo/v1/entity/{ids('raw/a.txt')}").json()["dataFileHandleId"]
    d_handle = api.get(f"/repo/v1/entity/{ids('other/d.txt')}").json()["dataFileHandleId"]
    assert [(row["rowId"], row["versionNumber"]) for row in rows] == [(1, 1), (2, 1), (3, 1)]
    assert all("etag" not in row for row in rows)  # entity etags are a view's
    assert [row["values"] for row in rows] == [
        [ids("raw/a.txt"), a_handle, "first", "1", "true", "1.5"],
        [ids("other/d.txt"), d_handle, 'say "hi", then go', "2", "false", None],
        [None] * 6,
    ]
    row_set = bundle["queryResult"]["queryResults"]
    assert (row_set["tableId"], row_set["concreteType"]) == (table, "org.sagebionetworks.repo.model.table.RowSet")


# --- paging ---------------------------------------------------------------------------------------
def test_paging_with_next_page_tokens(emulator_factory):
    emu = emulator_factory(query_page_rows=2)
    project = emu.seed_spec(SPEC)["p"]
    view = emu.resolve(project, "v")
    api = Api(emu)
    first = query(api, view, f"SELECT name FROM {view} ORDER BY name", part_mask=0x1 | 0x8)
    assert first["maxRowsPerPage"] == 2
    names = [v[0] for v in values(first)]
    token = first["queryResult"]["nextPageToken"]
    assert set(token) == {"concreteType", "token"}  # no entityId: TableQueryUtils.createNextPageToken sets none
    assert token["concreteType"] == "org.sagebionetworks.repo.model.table.QueryNextPageToken"
    pages = 1
    while token:
        started = api.post(f"/repo/v1/entity/{view}/table/query/nextPage/async/start", token)
        assert started.status_code == 201
        page = finish(api, f"/repo/v1/entity/{view}/table/query/nextPage/async/get/{started.json()['token']}")
        result = page.json()
        assert result["concreteType"] == "org.sagebionetworks.repo.model.table.QueryResult"
        names += [row["values"][0] for row in result["queryResults"]["rows"]]
        token = result.get("nextPageToken")
        pages += 1
    assert names == ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"] and pages == 3
    # the request's offset and limit apply inside the query's rows, pages within them
    windowed = query(api, view, f"SELECT name FROM {view} ORDER BY name", offset=1, limit=3)
    assert [v[0] for v in values(windowed)] == ["b.txt", "c.txt"]
    started = api.post(
        f"/repo/v1/entity/{view}/table/query/nextPage/async/start", windowed["queryResult"]["nextPageToken"]
    )
    rest = finish(api, f"/repo/v1/entity/{view}/table/query/nextPage/async/get/{started.json()['token']}").json()
    assert [row["values"] for row in rest["queryResults"]["rows"]] == [["d.txt"]]
    assert "nextPageToken" not in rest
    bad = api.post(f"/repo/v1/entity/{view}/table/query/nextPage/async/start", {"token": "not-a-token"})
    assert (
        finish(api, f"/repo/v1/entity/{view}/table/query/nextPage/async/get/{bad.json()['token']}").status_code == 400
    )
    assert api.post(f"/repo/v1/entity/{view}/table/query/nextPage/async/start", {}).status_code == 400


# --- partMask ------------------------------------------------------------------------------------
def test_part_mask_bits(tables):
    emu, api, ids = tables
    view = ids("v")
    sql = f"SELECT name, dataFileSizeBytes FROM {view} WHERE assay = 'rnaSeq'"
    only_results = query(api, view, sql, part_mask=0x1)
    assert set(only_results) == {"concreteType", "queryResult"}
    assert only_results["concreteType"] == "org.sagebionetworks.repo.model.table.QueryResultBundle"
    everything = query(api, view, sql, part_mask=0x3FF)
    assert set(everything) == {
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
        "actionsRequired",
    }
    assert everything["queryCount"] == 2
    assert [c["name"] for c in everything["selectColumns"]] == ["name", "dataFileSizeBytes"]
    assert everything["selectColumns"] == everything["queryResult"]["queryResults"]["headers"]
    assert len(everything["columnModels"]) == len(DEFAULT_COLUMN_NAMES) + 2
    assert everything["sumFileSizes"] == {"sumFileSizesBytes": 1 + 3, "greaterThan": False}
    assert (everything["actionsRequired"], everything["combinedSql"]) == ([], sql)
    # FacetModel: a result per faceted column of the view's schema (test_emulator_tables_conformance checks them)
    assert [f["columnName"] for f in everything["facets"]] == [
        "createdOn",
        "createdBy",
        "type",
        "parentId",
        "projectId",
        "modifiedOn",
        "modifiedBy",
    ]
    assert everything["lastUpdatedOn"].endswith("Z")
    count_only = query(api, view, sql, part_mask=0x2)
    assert set(count_only) == {"concreteType", "queryCount"}
    # no partMask: every part but actionsRequired (QueryOptions.withMask)
    assert set(query(api, view, sql, part_mask=None)) == set(everything) - {"actionsRequired"}
    assert set(query(api, view, sql, part_mask=0x400 | 0x1)) == {"concreteType", "queryResult"}


# --- SQL ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "where, expected",
    [
        ("assay = 'rnaSeq'", ["a.txt", "c.txt"]),
        ("assay <> 'rnaSeq'", ["b.txt", "d.txt"]),
        ("assay != 'rnaSeq'", ["b.txt", "d.txt"]),
        ("age < 40", ["a.txt"]),
        ("age > 40", ["c.txt"]),
        ("age <= 40", ["a.txt", "b.txt"]),
        ("age >= 40", ["b.txt", "c.txt"]),
        ("age BETWEEN 35 AND 50", ["b.txt", "c.txt"]),
        ("assay IN ('wgs', 'it''s quoted')", ["b.txt", "d.txt"]),
        ("assay NOT IN ('wgs')", ["a.txt", "c.txt", "d.txt"]),
        ("name LIKE '%.txt' AND name LIKE '_.txt'", ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]),
        ("name NOT LIKE 'a%'", ["b.txt", "c.txt", "d.txt", "e.txt"]),
        ("assay IS NULL", ["e.txt"]),
        ("assay IS NOT NULL AND age IS NULL", ["d.txt"]),
        ("NOT (assay = 'rnaSeq' OR assay = 'wgs')", ["d.txt"]),
        ("(assay = 'wgs' OR age = 50) AND currentVersion = 1", ["b.txt", "c.txt"]),
        ("currentVersion > 1", ["d.txt"]),
        ('"dataFileSizeBytes" >= 3', ["c.txt", "d.txt", "e.txt"]),
        ("age = -1 OR age = 30.0", ["a.txt"]),
        # Synapse's string columns are utf8mb4_general_ci (lib-table-cluster ColumnTypeInfo): comparisons ignore case
        ("assay = 'RNASEQ'", ["a.txt", "c.txt"]),
        ("assay IN ('WGS', 'IT''S QUOTED')", ["b.txt", "d.txt"]),
        ("assay > 'RNASEQ'", ["b.txt"]),
        ("name LIKE 'A%'", ["a.txt"]),
    ],
)
def test_where_constructs(tables, where, expected):
    emu, api, ids = tables
    view = ids("v")
    bundle = query(api, view, f"SELECT name FROM {view} WHERE {where} ORDER BY name")
    assert [v[0] for v in values(bundle)] == expected


def test_entity_ids_dates_and_booleans_compare_as_synapse_writes_them(tables):
    emu, api, ids = tables
    view, table = ids("v"), ids("t")
    a = ids("raw/a.txt")
    assert values(query(api, view, f"SELECT name FROM {view} WHERE id = '{a}'")) == [["a.txt"]]
    assert values(query(api, view, f"SELECT name FROM {view} WHERE id = {a[3:]}")) == [["a.txt"]]
    assert values(query(api, view, f"SELECT name FROM {view} WHERE parentId = '{ids('raw/deep')}'")) == [["c.txt"]]
    created = values(query(api, view, f"SELECT createdOn FROM {view} WHERE id = '{a}'"))[0][0]
    assert values(query(api, view, f"SELECT name FROM {view} WHERE createdOn = {created} AND name = 'a.txt'")) == [
        ["a.txt"]
    ]
    assert len(values(query(api, view, f"SELECT name FROM {view} WHERE createdOn > '2000-01-02T03:04:05.678Z'"))) == 5
    assert values(query(api, view, f"SELECT name FROM {view} WHERE createdOn < '2000-01-02T03:04:05Z'")) == []
    assert values(query(api, table, f"SELECT n FROM {table} WHERE ok = true")) == [["1"]]
    assert values(query(api, table, f"SELECT n FROM {table} WHERE ok = 'false'")) == [["2"]]
    assert values(query(api, table, f"SELECT n FROM {table} WHERE x > 1")) == [["1"]]


def test_order_by_limit_offset_distinct_count_and_nulls(tables):
    emu, api, ids = tables
    view, table = ids("v"), ids("t")
    ordered = query(api, view, f'SELECT name, age FROM {view} ORDER BY "assay" DESC, age ASC')
    assert values(ordered) == [["b.txt", "40"], ["a.txt", "30"], ["c.txt", "50"], ["d.txt", None], ["e.txt", None]]
    limited = query(api, view, f"SELECT name FROM {view} ORDER BY name DESC LIMIT 2 OFFSET 1")
    assert values(limited) == [["d.txt"], ["c.txt"]]
    assert values(query(api, view, f"SELECT name FROM {view} ORDER BY name LIMIT 1")) == [["a.txt"]]
    assert values(query(api, table, f"SELECT n FROM {table} ORDER BY n")) == [[None], ["1"], ["2"]]  # nulls first
    distinct = query(api, view, f"SELECT DISTINCT assay FROM {view} ORDER BY assay")
    assert values(distinct) == [[None], ["it's quoted"], ["rnaSeq"], ["wgs"]]
    assert "rowId" not in distinct["queryResult"]["queryResults"]["rows"][0]
    counted = query(api, view, f"select count(*) from {view} where assay = 'rnaSeq'")
    assert values(counted) == [["2"]]
    assert counted["queryResult"]["queryResults"]["headers"] == [{"name": "COUNT(*)", "columnType": "INTEGER"}]


@pytest.mark.parametrize(
    "sql, reason",
    [
        ("SELECT id FROM {v}; DROP TABLE row_table", "';' is not allowed"),
        ("SELECT id FROM {v} -- comment", "Comments are not allowed"),
        ("SELECT id FROM {v} /* x */", "Comments are not allowed"),
        ("SELECT id FROM {v} WHERE id IN (SELECT id FROM {v})", "Subqueries are not supported"),
        ("SELECT id FROM (SELECT id FROM {v})", "Subqueries are not supported"),
        ("SELECT nope FROM {v}", "Column 'nope' does not exist"),
        ("SELECT id FROM {v} WHERE nope = 1", "Column 'nope' does not exist"),
        ("SELECT id FROM {v} ORDER BY nope", "Column 'nope' does not exist"),
        ("SELECT id FROM {t}", "does not match the entity of the request"),
        ("SELECT id FROM {v}, {t}", "joins are not supported"),
        ("SELECT id FROM {v} JOIN {t}", "Only one table or view per query"),
        ("SELECT id FROM {v} UNION SELECT id FROM {v}", "Only one table or view per query"),
        ("SELECT upper(name) FROM {v}", "Functions are not supported: upper(...)"),
        ("SELECT id FROM {v} WHERE name = 'unterminated", "Unterminated quoted string"),
        ("SELECT id FROM {v} WHERE age = 'thirty'", "not a valid value for column 'age'"),
        ("SELECT id FROM {v} WHERE name = upper('x')", "Expected a literal"),
        ("SELECT id FROM {v} GROUP BY assay", "Expected the end of the query"),
        ("SELECT id FROM {v}.1", "table version"),
        ("DELETE FROM {v}", "Expected SELECT"),
        ("SELECT id FROM {v} LIMIT -1", "non-negative whole number"),
        ("SELECT id FROM {v} WHERE name = `x`", "Unexpected character"),
        # letters and digits outside ASCII (str.isalpha/isdigit say yes, the tokenizer's patterns no): were a crash
        ("SELECT id FROM {v} WHERE \u00e9t\u00e9 = 1", "Unexpected character '\u00e9'"),
        ("SELECT id FROM {v} WHERE age = \u00b2", "Unexpected character '\u00b2'"),
    ],
)
def test_rejected_sql_is_a_400_with_a_reason(tables, sql, reason):
    emu, api, ids = tables
    view = ids("v")
    text = failure(api, view, sql.format(v=view, t=ids("t")))
    assert reason in text


def test_queries_of_other_entities_fail(tables):
    emu, api, ids = tables
    folder = ids("raw")
    assert "not a table or view" in failure(api, folder, f"SELECT id FROM {folder}")
    hidden = ids("raw/hidden.txt")
    token = start(api, hidden, f"SELECT id FROM {hidden}")
    assert finish(api, f"/repo/v1/entity/{hidden}/table/query/async/get/{token}").status_code == 403
    token = start(api, "syn999999", "SELECT id FROM syn999999")
    assert finish(api, f"/repo/v1/entity/syn999999/table/query/async/get/{token}").status_code == 404


# --- views lag when asked -------------------------------------------------------------------------
def test_views_are_live_by_default_and_lag_with_the_knob(tables):
    emu, api, ids = tables
    view = ids("v")
    a = ids("raw/a.txt")
    sql = f"SELECT currentVersion, dataFileHandleId FROM {view} WHERE id = '{a}'"
    before = values(query(api, view, sql))
    emu.add_version(a, b"A, version 2")
    new_handle = api.get(f"/repo/v1/entity/{a}").json()["dataFileHandleId"]
    assert values(query(api, view, sql)) == [["2", new_handle]]  # live
    emu.set_knobs(view_lag=True)
    assert values(query(api, view, sql)) == before  # the snapshot taken at seeding: version 1, its handle
    emu.add_file(ids("raw"), "late.txt", b"late")
    assert values(query(api, view, f"SELECT name FROM {view} WHERE name = 'late.txt'")) == []
    assert emu.refresh_views(view) == [view]
    assert values(query(api, view, sql)) == [["2", new_handle]]
    assert values(query(api, view, f"SELECT name FROM {view} WHERE name = 'late.txt'")) == [["late.txt"]]
    emu.add_version(a, b"A, version 3")
    answer = requests.post(emu.endpoint + "/emulator/views/refresh", json={})
    assert answer.status_code == 200 and set(answer.json()["refreshed"]) == {view, ids("whole")}
    assert values(query(api, view, sql))[0][0] == "3"
    assert requests.post(emu.endpoint + "/emulator/views/refresh", json={"id": ids("t")}).status_code == 400


# --- CSV ------------------------------------------------------------------------------------------
def _csv(api, entity_id, body):
    started = api.post(f"/repo/v1/entity/{entity_id}/table/download/csv/async/start", body)
    assert started.status_code == 201
    result = finish(api, f"/repo/v1/entity/{entity_id}/table/download/csv/async/get/{started.json()['token']}")
    assert result.status_code == 201, result.text
    return result.json()


def _download(api, handle_id, entity_id, association="TableEntity"):
    answer = api.post(
        "/file/v1/fileHandle/batch",
        {
            "requestedFiles": [
                {"fileHandleId": handle_id, "associateObjectId": entity_id, "associateObjectType": association}
            ],
            "includePreSignedURLs": True,
            "includeFileHandles": True,
        },
    ).json()["requestedFiles"][0]
    if "failureCode" in answer:
        return answer["failureCode"]
    return requests.get(answer["preSignedURL"]).content


def test_csv_download_of_a_table(tables):
    emu, api, ids = tables
    table = ids("t")
    result = _csv(
        api,
        table,
        {
            "concreteType": "org.sagebionetworks.repo.model.table.DownloadFromTableRequest",
            "sql": f"SELECT file, note, x FROM {table}",
            "writeHeader": True,
            "includeRowIdAndRowVersion": True,
            "includeEntityEtag": True,
            "csvTableDescriptor": {
                "separator": ",",
                "quoteCharacter": '"',
                "escapeCharacter": "\\",
                "lineEnd": "\n",
                "isFirstLineHeader": True,
            },
        },
    )
    assert result["concreteType"] == "org.sagebionetworks.repo.model.table.DownloadFromTableResult"
    assert (result["tableId"], [h["name"] for h in result["headers"]]) == (table, ["file", "note", "x"])
    data = _download(api, result["resultsFileHandleId"], table)
    assert data == (
        b'"ROW_ID","ROW_VERSION","file","note","x"\n'
        + f'"1","1","{ids("raw/a.txt")}","first","1.5"\n'.encode()
        + f'"2","1","{ids("other/d.txt")}","say \\"hi\\", then go",\n'.encode()
        + b'"3","1",,,\n'
    )
    rows = list(csv.reader(io.StringIO(data.decode()), escapechar="\\"))
    assert rows[2][3] == 'say "hi", then go' and rows[3] == ["3", "1", "", "", ""]
    handle = api.post(
        "/file/v1/fileHandle/batch",
        {
            "requestedFiles": [
                {
                    "fileHandleId": result["resultsFileHandleId"],
                    "associateObjectId": table,
                    "associateObjectType": "TableEntity",
                }
            ],
            "includeFileHandles": True,
        },
    ).json()["requestedFiles"][0]
    assert handle["fileHandle"]["contentType"] == "text/csv"
    # the CSV's handle is the table's: not through another table, not as a FileEntity
    assert _download(api, result["resultsFileHandleId"], ids("v")) == "UNAUTHORIZED"
    assert _download(api, result["resultsFileHandleId"], table, "FileEntity") == "UNAUTHORIZED"
    # a handle in one of the table's FILEHANDLEID cells downloads through the table
    a_handle = api.get(f"/repo/v1/entity/{ids('raw/a.txt')}").json()["dataFileHandleId"]
    assert _download(api, a_handle, table) == b"A"
    assert _download(api, a_handle, ids("v")) == "UNAUTHORIZED"


def test_csv_download_of_a_view_options(tables):
    emu, api, ids = tables
    view = ids("v")
    sql = f"SELECT name, assay FROM {view} WHERE assay IS NOT NULL ORDER BY name"
    result = _csv(api, view, {"sql": sql, "includeEntityEtag": True, "csvTableDescriptor": {"lineEnd": "\n"}})
    lines = _download(api, result["resultsFileHandleId"], view).decode().splitlines()
    assert lines[0] == '"ROW_ID","ROW_VERSION","ROW_ETAG","name","assay"'
    d_entity = api.get(f"/repo/v1/entity/{ids('other/d.txt')}").json()
    assert f'"{d_entity["id"][3:]}","2","{d_entity["etag"]}","d.txt","it\'s quoted"' in lines
    bare = _csv(
        api,
        view,
        {
            "sql": sql,
            "writeHeader": False,
            "includeRowIdAndRowVersion": False,
            "csvTableDescriptor": {"separator": "\t", "lineEnd": "\r\n"},
        },
    )
    data = _download(api, bare["resultsFileHandleId"], view)
    assert data.split(b"\r\n")[0] == b'"a.txt"\t"rnaSeq"' and data.count(b"\r\n") == 4
    counted = _csv(api, view, {"sql": f"SELECT COUNT(*) FROM {view}", "includeRowIdAndRowVersion": True})
    assert _download(api, counted["resultsFileHandleId"], view) == b'"COUNT(*)"\n"5"\n'  # no row ids: aggregate
    started = api.post(f"/repo/v1/entity/{view}/table/download/csv/async/start", {"sql": f"SELECT x FROM {view}"})
    failed = finish(api, f"/repo/v1/entity/{view}/table/download/csv/async/get/{started.json()['token']}")
    assert failed.status_code == 400 and "Column 'x' does not exist" in failed.json()["reason"]


# --- stats, faults, restart -----------------------------------------------------------------------
def test_query_routes_are_counted_and_faulted_as_a_route_class(emulator_factory):
    emu = emulator_factory(fault_api_5xx_rate={"query": 1.0}, fault_api_5xx_statuses=[503])
    project = emu.seed_spec(SPEC)["p"]
    table = emu.resolve(project, "t")
    api = Api(emu)
    assert api.get(f"/repo/v1/entity/{table}").status_code == 200
    answer = api.post(f"/repo/v1/entity/{table}/table/query/async/start", {"query": {"sql": f"SELECT n FROM {table}"}})
    assert answer.status_code == 503
    stats = emu.stats()
    assert stats["api_by_class"] == {"entity": 1, "query": 1}
    assert stats["api_by_route"]["POST /repo/v1/entity/{id}/table/query/async/start"] == 1
    emu.set_knobs(fault_api_5xx_rate=0.0)
    token = start(api, table, f"SELECT n FROM {table}")
    finish(api, f"/repo/v1/entity/{table}/table/query/async/get/{token}")
    assert emu.stats()["api_by_route"]["GET /repo/v1/entity/{id}/table/query/async/get/{id}"] == 2


def test_views_and_tables_survive_a_restart(emulator_factory, tmp_path):
    emu = emulator_factory(data_dir=tmp_path / "store")
    project = emu.seed_spec(SPEC)["p"]
    table, view = emu.resolve(project, "t"), emu.resolve(project, "v")
    emu.restart()
    api = Api(emu)
    assert values(query(api, table, f"SELECT note FROM {table} WHERE n = 1")) == [["first"]]
    assert len(values(query(api, view, f"SELECT id FROM {view}"))) == 5
    emu.delete_entity(project)
    assert api.get(f"/repo/v1/entity/{view}").status_code == 404
    assert emu.store.table_rows(int(table[3:])) == []


# --- spec errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "node, message",
    [
        ({"type": "entityview"}, "scope must be a list of refs"),
        ({"type": "entityview", "scope": ["nope"]}, "scope[0]: ref 'nope' not found in the project"),
        ({"type": "entityview", "scope": ["f"]}, "scope[0]: ref 'f' is a file, not a folder or project"),
        ({"type": "entityview", "scope": [""], "columns": ["name"]}, "name given twice"),
        ({"type": "entityview", "scope": [""], "columns": [{"name": "a", "type": "JSON"}]}, "column type must be"),
        ({"type": "entityview", "scope": [""], "columns": [3]}, "columns[0]: a column is a name"),
        ({"type": "entityview", "scope": [""], "rows": []}, "a view has no rows"),
        ({"type": "entityview", "scope": [""], "defaultColumns": "no"}, "defaultColumns must be true or false"),
        ({"type": "table", "scope": []}, "a table has no scope"),
        ({"type": "table", "columns": ["a"], "rows": [["x", "y"]]}, "rows[0]: a row is a list of 1 cells"),
        (
            {"type": "table", "columns": [{"name": "a", "type": "ENTITYID"}], "rows": [["nope"]]},
            "rows[0][0]: ref 'nope' not found",
        ),
        ({"type": "table", "columns": [{"name": "a", "type": "ENTITYID"}], "rows": [[5]]}, "an ENTITYID cell is a ref"),
        (
            {"type": "table", "columns": [{"name": "a", "type": "FILEHANDLEID"}], "rows": [["d"]]},
            "ref 'd' is a folder, not a file",
        ),
        ({"type": "table", "columns": [{"name": "a", "type": "INTEGER"}], "rows": [["many"]]}, "rows[0][0]"),
        ({"type": "table", "columns": [{"name": "a", "maximumSize": 0}]}, "maximumSize must be a positive integer"),
    ],
)
def test_bad_view_and_table_specs_name_the_node(emulator, node, message):
    assert_spec_node_refused(emulator, node, message)


def test_views_without_default_columns_and_a_project_scope_by_empty_ref(emulator):
    project = emulator.seed_spec(
        {
            "projects": [
                {
                    "name": "p",
                    "children": [
                        {"type": "file", "name": "f", "content": "x", "annotations": {"k": "v"}},
                        {"type": "entityview", "name": "v", "scope": [""], "defaultColumns": False, "columns": ["k"]},
                    ],
                }
            ]
        }
    )["p"]
    view = emulator.resolve(project, "v")
    api = Api(emulator)
    assert [m["name"] for m in api.get(f"/repo/v1/entity/{view}/column").json()["results"]] == ["k"]
    assert api.get(f"/repo/v1/entity/{view}").json()["scopeIds"] == [project[3:]]
    bundle = query(api, view, f"SELECT * FROM {view}")
    assert values(bundle) == [["v"]]
    assert bundle["queryResult"]["queryResults"]["rows"][0]["rowId"] == int(emulator.resolve(project, "f")[3:])
