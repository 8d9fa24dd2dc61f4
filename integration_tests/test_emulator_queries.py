"""Fidelity: the official synapseclient 4.14 against the emulator's entity views, tables and table queries.

No patching of synapseclient: it gets the emulator's endpoints and token, and (a client setting, not a patch) a short
``table_query_sleep`` so its polling of the 202 answers takes milliseconds. What these tests pin about synapseclient
itself is said in each docstring and in docs/emulator.md.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import warnings

import pytest

synapseclient = pytest.importorskip("synapseclient")

#: 12 files in two scope folders (one nested), 3 outside the scope, annotations "assay" and "age"
FILES = {
    f"data/f{i:02d}.txt": (f"content of file {i}\n" * (i + 1), "rnaSeq" if i % 3 == 0 else "wgs", 20 + i)
    for i in range(8)
}
FILES.update({f"data/nested/n{i}.txt": (f"nested {i}\n", "rnaSeq" if i % 2 else "atac", 40 + i) for i in range(4)})
OUTSIDE = {f"elsewhere/o{i}.txt": f"outside {i}\n" for i in range(3)}


def _children(prefix: str, entries):
    """The spec children of folder ``prefix`` from a {path: node} map."""
    nodes = []
    folders = {}
    for path, node in entries.items():
        rest = path[len(prefix) :]
        if "/" in rest:
            folders.setdefault(rest.split("/", 1)[0], None)
        else:
            nodes.append(dict(node, type="file", name=rest))
    for folder in folders:
        nodes.append(
            {
                "type": "folder",
                "name": folder,
                "children": _children(
                    f"{prefix}{folder}/",
                    {path: node for path, node in entries.items() if path.startswith(f"{prefix}{folder}/")},
                ),
            }
        )
    return nodes


def _spec():
    entries = {
        path: {"content": content, "annotations": {"assay": assay, "age": age}}
        for path, (content, assay, age) in FILES.items()
    }
    entries.update({path: {"content": content} for path, content in OUTSIDE.items()})
    children = _children("", entries)
    children += [
        {
            "type": "entityview",
            "name": "files",
            "scope": ["data"],
            "columns": ["assay", {"name": "age", "type": "INTEGER"}],
        },
        {
            "type": "table",
            "name": "notes",
            "columns": [
                {"name": "file", "type": "ENTITYID"},
                {"name": "fh", "type": "FILEHANDLEID"},
                {"name": "note", "type": "STRING"},
                {"name": "score", "type": "DOUBLE"},
            ],
            "rows": [[path, path, f"note {index}", index / 2] for index, path in enumerate(sorted(FILES))],
        },
    ]
    return {"projects": [{"name": "q", "children": children}]}


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():  # tableQuery and syn.get are deprecated in 4.14 (still what scripts call)
        warnings.simplefilter("ignore", DeprecationWarning)
        return call(*args, **kwargs)


@pytest.fixture
def queries(emulator_factory, synapse_login):
    """(emulator, logged-in Synapse, path -> id) with rows of 5 per query page (the 12-file view is 3 pages)."""
    emu = emulator_factory(query_page_rows=5)
    project = emu.seed_spec(_spec())["q"]
    syn = synapse_login(emu)
    syn.table_query_sleep = 0.01
    return emu, syn, lambda path: emu.resolve(project, path)


def test_syn_get_of_a_view_and_a_table(queries):
    """syn.get answers an ``EntityViewSchema`` (scopeIds and viewTypeMask as sent) and a ``Schema`` for the table;
    the models API's ``EntityView(...).get()`` also reads the columns (``GET /entity/{id}/column``)."""
    emu, syn, ids = queries
    view = _quiet(syn.get, ids("files"))
    assert isinstance(view, synapseclient.EntityViewSchema)
    assert (view.scopeIds, view.viewTypeMask) == ([ids("data")[3:]], 1)
    assert len(view.columnIds) == 15 + 2
    table = _quiet(syn.get, ids("notes"))
    assert isinstance(table, synapseclient.Schema) and len(table.columnIds) == 4
    from synapseclient.models import EntityView, Table

    model_view = EntityView(id=ids("files")).get(synapse_client=syn)
    assert list(model_view.columns)[:3] == ["id", "name", "createdOn"]
    assert model_view.columns["age"].column_type.value == "INTEGER"
    model_table = Table(id=ids("notes")).get(synapse_client=syn)
    assert list(model_table.columns) == ["file", "fh", "note", "score"]


def test_table_query_csv_default(queries):
    """``syn.tableQuery(sql)`` (CSV, the default): one download job, the CSV's handle fetched through fileHandle/batch
    with the TableEntity association, rows as the view has them. A view's CSV carries ROW_ETAG too, so synapseclient's
    "headers + 2 columns" test says the file has no row ids; its row iterator skips the three metadata columns."""
    emu, syn, ids = queries
    emu.reset_stats()
    view = ids("files")
    result = _quiet(syn.tableQuery, f"SELECT id, name, assay, age, dataFileMD5Hex FROM {view} WHERE age >= 22")
    rows = list(result)
    expected = sorted(
        (ids(path), path.rsplit("/", 1)[-1], assay, age, hashlib.md5(content.encode()).hexdigest())
        for path, (content, assay, age) in FILES.items()
        if age >= 22
    )
    assert sorted(tuple(row) for row in rows) == expected
    with open(result.filepath, encoding="utf-8") as handle:
        assert handle.readline().startswith('"ROW_ID","ROW_VERSION","ROW_ETAG","id"')
    routes = emu.stats()["api_by_route"]
    assert routes["POST /repo/v1/entity/{id}/table/download/csv/async/start"] == 1
    assert routes["GET /repo/v1/entity/{id}/table/download/csv/async/get/{id}"] == 2  # one 202, then the result
    assert routes["POST /file/v1/fileHandle/batch"] == 1
    assert emu.stats()["data_requests"] == 1
    table_rows = list(_quiet(syn.tableQuery, f"SELECT note, score FROM {ids('notes')} WHERE score > 4"))
    assert [row[2:] for row in table_rows] == [["note 9", 4.5], ["note 10", 5.0], ["note 11", 5.5]]
    assert [row[:2] for row in table_rows] == [["10", "1"], ["11", "1"], ["12", "1"]]  # ROW_ID, ROW_VERSION first


def test_table_query_rowset_pages(queries):
    """``resultsAs="rowset"``: QueryBundleRequest then two nextPage jobs (page size 5, 12 rows), values cast by
    synapseclient from the strings the emulator sends; rowId and versionNumber are the file's id and version."""
    emu, syn, ids = queries
    emu.reset_stats()
    view = ids("files")
    emu.add_version(ids("data/f01.txt"), b"second version")
    result = _quiet(
        syn.tableQuery, f"SELECT id, name, currentVersion, age FROM {view} ORDER BY name", resultsAs="rowset"
    )
    rows = _quiet(list, result)  # iterating fetches the next pages
    assert len(rows) == 12
    names = [row["values"][1] for row in rows]
    assert names == sorted(path.rsplit("/", 1)[-1] for path in FILES)
    by_name = {row["values"][1]: row for row in rows}
    f01 = by_name["f01.txt"]
    assert (f01["values"][0], f01["values"][2], f01["rowId"], f01["versionNumber"]) == (
        ids("data/f01.txt"),
        2,
        int(ids("data/f01.txt")[3:]),
        2,
    )
    assert by_name["n3.txt"]["values"][3] == 43
    routes = emu.stats()["api_by_route"]
    assert routes["POST /repo/v1/entity/{id}/table/query/async/start"] == 1
    assert routes["POST /repo/v1/entity/{id}/table/query/nextPage/async/start"] == 2
    assert emu.stats()["api_by_class"]["query"] == 3 * 2 + 3 * 1  # 3 jobs: a start, a 202 and a 200 each


def test_lagging_view_seen_through_synapseclient(emulator_factory, synapse_login):
    """With ``view_lag`` the view still says version 1 and the old handle after a new version, until refreshed."""
    emu = emulator_factory(view_lag=True)
    project = emu.seed_spec(_spec())["q"]
    syn = synapse_login(emu)
    syn.table_query_sleep = 0.01
    view, file_id = emu.resolve(project, "files"), emu.resolve(project, "data/f02.txt")
    old_handle = _quiet(syn.get, file_id, downloadFile=False)["dataFileHandleId"]
    emu.add_version(file_id, b"v2")
    sql = f"SELECT currentVersion, dataFileHandleId FROM {view} WHERE id = '{file_id}'"
    assert [list(row) for row in _quiet(syn.tableQuery, sql)] == [[1, old_handle]]
    emu.refresh_views()
    new_handle = _quiet(syn.get, file_id, downloadFile=False)["dataFileHandleId"]
    assert [list(row) for row in _quiet(syn.tableQuery, sql)] == [[2, new_handle]]


def test_a_bad_query_is_a_synapse_http_error(queries):
    """A failed job answers its error (400 + reason), which synapseclient raises as SynapseHTTPError."""
    emu, syn, ids = queries
    from synapseclient.core.exceptions import SynapseHTTPError

    with pytest.raises(SynapseHTTPError, match="Column 'nope' does not exist"):
        _quiet(syn.tableQuery, f"SELECT nope FROM {ids('files')}", resultsAs="rowset")
    with pytest.raises(SynapseHTTPError, match="is not allowed"):
        _quiet(syn.tableQuery, f"SELECT id FROM {ids('files')}; DROP TABLE x")


def test_cli_get_by_query_downloads_exactly_the_selected_files(queries, tmp_path):
    """The official CLI, ``synapse get -q "SELECT id FROM synV WHERE assay = 'rnaSeq'"``: it downloads the query's
    CSV into the download folder (synapseclient keeps it there), reads its ``id`` column and gets each file."""
    emu, syn, ids = queries
    config = tmp_path / "synapseConfig"
    config.write_text(
        f"[endpoints]\nrepoEndpoint = {emu.endpoint}/repo/v1\nauthEndpoint = {emu.endpoint}/auth/v1\n"
        f"fileHandleEndpoint = {emu.endpoint}/file/v1\nportalEndpoint = {emu.endpoint}/\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    query = f"SELECT id FROM {ids('files')} WHERE assay = 'rnaSeq'"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "synapseclient",
            "-c",
            str(config),
            "--skip-checks",
            "-p",
            emu.token,
            "get",
            "-q",
            query,
            "--downloadLocation",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
    )
    assert done.returncode == 0, done.stderr
    selected = {path.rsplit("/", 1)[-1]: content for path, (content, assay, _age) in FILES.items() if assay == "rnaSeq"}
    downloaded = {p.name: p.read_text() for p in out.iterdir() if not p.name.startswith("SYNAPSE_TABLE_QUERY_")}
    assert downloaded == selected
    assert len([p for p in out.iterdir() if p.name.startswith("SYNAPSE_TABLE_QUERY_")]) == 1
