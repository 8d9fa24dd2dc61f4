"""Conformance: the official synapseclient 4.14's download, query and lookup calls against the emulator.

Every call's exchanges are recorded by the emulator (knob ``record_exchanges``); each test asserts the values the
call returns (names, ids, MD5s, versions, rows, bytes on disk) and that its exchanges hold no 5xx, no request to a
route the emulator lacks, and no 4xx but those real Synapse answers to these calls too (``_EXPECTED_4XX`` and the
ones a test names). What the tests expect is what Synapse does, not what the emulator does today: a test that fails
names an emulator mismatch (issue 30). No patching of synapseclient: it gets the emulator's endpoints and token, and a
short ``table_query_sleep`` (a client setting) so its polling takes milliseconds.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Set, Tuple

import pytest

from synclient.emulator import seeded_bytes
from synclient.emulator.stats import route_key

synapseclient = pytest.importorskip("synapseclient")
synapseutils = pytest.importorskip("synapseutils")
models = pytest.importorskip("synapseclient.models")

#: exchanges kept per emulator: far more than the largest test makes
RECORDED = 5000
WIDE = 55  # > 50: two pages of entity/children
VERSIONS = ["one\n", "two!\n", "three\n"]
B_BIN = seeded_bytes(3000, 3)
#: the project's readable files, path -> bytes of the current version (the files syncFromSynapse writes)
DOWNLOADABLE = {
    "raw/a.txt": b"alpha\n",
    "raw/sub/b.bin": B_BIN,
    "v.txt": VERSIONS[-1].encode(),
    "ext.csv": b"a,b\n1,2\n",
}
DOWNLOADABLE.update({f"wide/w{i:02d}.txt": f"w{i}\n".encode() for i in range(WIDE)})

SPEC = {
    "projects": [
        {
            "name": "conf",
            "children": [
                {
                    "type": "folder",
                    "name": "raw",
                    "children": [
                        {"type": "file", "name": "a.txt", "content": "alpha\n", "annotations": {"assay": "rna"}},
                        {
                            "type": "folder",
                            "name": "sub",
                            "children": [{"type": "file", "name": "b.bin", "size": 3000, "seed": 3}],
                        },
                    ],
                },
                {
                    "type": "folder",
                    "name": "wide",
                    "children": [{"type": "file", "name": f"w{i:02d}.txt", "content": f"w{i}\n"} for i in range(WIDE)]
                    + [{"type": "folder", "name": "inner", "children": []}],
                },
                {"type": "file", "name": "v.txt", "versions": [{"content": text} for text in VERSIONS]},
                {"type": "file", "name": "nodl.txt", "content": "metadata only\n", "deny": "download"},
                {"type": "file", "name": "secret.txt", "content": "hidden\n", "deny": True},
                {"type": "file", "name": "ext.csv", "external": True, "content": "a,b\n1,2\n"},
                {"type": "dataset", "name": "ds", "items": [{"ref": "raw/a.txt"}, {"ref": "v.txt", "version": 2}]},
                {"type": "entityview", "name": "view", "scope": ["raw"], "columns": ["assay"]},
                {
                    "type": "table",
                    "name": "tab",
                    "columns": [{"name": "file", "type": "ENTITYID"}, {"name": "note", "type": "STRING"}],
                    "rows": [["raw/a.txt", "first"], ["v.txt", "second"], [None, "third"]],
                },
            ],
        }
    ]
}

#: (route key, status) that Synapse answers to these calls on this data: no provenance is a 404
#: (EntityController.getActivityForEntity -> NodeManager.getActivityForNode throws NotFoundException), which
#: synapseclient reads as "no activity"
_EXPECTED_4XX: Set[Tuple[str, int]] = {
    ("GET /repo/v1/entity/{id}/version/{v}/generatedBy", 404),
    ("GET /repo/v1/entity/{id}/generatedBy", 404),
}


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():  # syn.get, tableQuery, syncFromSynapse are deprecated in 4.14, still called
        warnings.simplefilter("ignore", DeprecationWarning)
        return call(*args, **kwargs)


def _read(path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def unexpected(exchanges: Iterable, allowed: Iterable[Tuple[str, int]] = ()) -> List[str]:
    """The exchanges Synapse would not have answered so: a 5xx, a route the emulator lacks, an unexpected 4xx."""
    allowed = set(allowed) | _EXPECTED_4XX
    found = []
    for exchange in exchanges:
        key = route_key(exchange.method, exchange.path)
        reason = exchange.response.get("reason", "") if isinstance(exchange.response, dict) else ""
        if (
            exchange.status >= 500
            or reason.startswith("No such route")
            or (exchange.status >= 400 and (key, exchange.status) not in allowed)
        ):
            found.append(f"{key} -> {exchange.status} {reason}")
    return found


@dataclass
class World:
    emu: object
    syn: object
    project: str
    tmp: object
    #: every exchange a check has seen, in order
    seen: List = field(default_factory=list)

    def id(self, path: str) -> str:
        return self.emu.resolve(self.project, path)

    def check(self, *allowed: Tuple[str, int]) -> List:
        """The exchanges since the last check (then forgotten); fails on any that Synapse would not answer so."""
        exchanges = self.emu.exchanges(clear=True)
        self.seen.extend(exchanges)
        assert exchanges, "no exchange recorded"
        assert unexpected(exchanges, allowed) == []
        return exchanges


@pytest.fixture
def world(emulator_factory, synapse_login, tmp_path) -> World:
    emu = emulator_factory(record_exchanges=RECORDED)
    project = emu.seed_spec(SPEC)["conf"]
    syn = synapse_login(emu)
    syn.table_query_sleep = 0.01
    emu.exchanges(clear=True)  # the login's own
    return World(emu, syn, project, tmp_path)


# --- syn.get ----------------------------------------------------------------------------------------------------
def test_get_files_and_versions(world):
    syn, out = world.syn, world.tmp / "get"
    entity = _quiet(syn.get, world.id("raw/a.txt"), downloadLocation=str(out / "a"))
    assert (entity.id, entity.name, entity.versionNumber) == (world.id("raw/a.txt"), "a.txt", 1)
    assert entity.md5 == md5(b"alpha\n") and _read(entity.path) == b"alpha\n"
    assert entity.parentId == world.id("raw") and entity.annotations["assay"] == ["rna"]
    current = _quiet(syn.get, world.id("v.txt"), downloadLocation=str(out / "v"))
    assert (current.versionNumber, current.md5, _read(current.path)) == (3, md5(b"three\n"), b"three\n")
    for number, text in enumerate(VERSIONS[:2], start=1):
        old = _quiet(syn.get, world.id("v.txt"), version=number, downloadLocation=str(out / f"v{number}"))
        assert (old.versionNumber, old.md5, _read(old.path)) == (number, md5(text.encode()), text.encode())
    world.check()


def test_get_without_download_a_folder_and_a_dataset(world):
    syn = world.syn
    entity = _quiet(syn.get, world.id("v.txt"), downloadFile=False)
    assert (entity.name, entity.versionNumber, entity.md5, entity.path) == ("v.txt", 3, md5(b"three\n"), None)
    assert (entity._file_handle["contentSize"], entity._file_handle["fileName"]) == (len(b"three\n"), "v.txt")
    folder = _quiet(syn.get, world.id("raw"))
    assert isinstance(folder, synapseclient.Folder)
    assert (folder.id, folder.name, folder.parentId) == (world.id("raw"), "raw", world.project)
    dataset = _quiet(syn.get, world.id("ds"))
    assert type(dataset).__name__ == "Dataset" and dataset.name == "ds"
    view, table = _quiet(syn.get, world.id("view")), _quiet(syn.get, world.id("tab"))
    assert isinstance(view, synapseclient.EntityViewSchema) and view.scopeIds == [world.id("raw")[3:]]
    assert isinstance(table, synapseclient.Schema) and len(table.columnIds) == 2
    world.check()


def test_get_an_external_handle(world):
    entity = _quiet(world.syn.get, world.id("ext.csv"), downloadLocation=str(world.tmp / "ext"))
    assert (entity.name, _read(entity.path), entity.md5) == ("ext.csv", b"a,b\n1,2\n", md5(b"a,b\n1,2\n"))
    world.check()


def test_get_a_file_one_may_read_but_not_download(world):
    """Synapse's bundle2 has no handle for it (``fileHandles: []``): synapseclient warns, downloads nothing and
    answers the entity; it never asks fileHandle/batch."""
    syn = world.syn
    entity = _quiet(syn.get, world.id("nodl.txt"), downloadLocation=str(world.tmp / "nodl"))
    assert (entity.id, entity.name, entity.path) == (world.id("nodl.txt"), "nodl.txt", None)
    assert not (world.tmp / "nodl").exists() or os.listdir(world.tmp / "nodl") == []
    metadata = _quiet(syn.get, world.id("nodl.txt"), downloadFile=False)
    assert (metadata.name, metadata.versionNumber) == ("nodl.txt", 1)
    exchanges = world.check()
    assert not [e for e in exchanges if e.path.endswith("/fileHandle/batch")]


def test_get_an_unreadable_file_is_403(world):
    with pytest.raises(synapseclient.core.exceptions.SynapseHTTPError) as raised:
        _quiet(world.syn.get, world.id("secret.txt"), downloadFile=False)
    assert raised.value.response.status_code == 403
    world.check(("POST /repo/v1/entity/{id}/bundle2", 403))


# --- findEntityId, getChildren ---------------------------------------------------------------------------------
def test_find_entity_id(world):
    syn = world.syn
    assert syn.findEntityId("raw", world.project) == world.id("raw")
    assert syn.findEntityId("b.bin", world.id("raw/sub")) == world.id("raw/sub/b.bin")
    assert syn.findEntityId("conf") == world.project  # a project: parentId null
    world.check()
    assert syn.findEntityId("nope", world.project) is None  # Synapse: 404, which synapseclient reads as None
    assert syn.findEntityId("no such project") is None
    world.check(("POST /repo/v1/entity/child", 404))


def test_get_children(world):
    """Default types (every container child type), includeTypes, and paging over > 50 children. Synapse lists only
    the children the caller may read: ``secret.txt`` is not there."""
    syn = world.syn
    names = [child["name"] for child in syn.getChildren(world.project)]
    assert names == ["ds", "ext.csv", "nodl.txt", "raw", "tab", "v.txt", "view", "wide"]
    assert [(c["name"], c["id"]) for c in syn.getChildren(world.project, includeTypes=["folder"])] == [
        ("raw", world.id("raw")),
        ("wide", world.id("wide")),
    ]
    files = list(syn.getChildren(world.id("wide"), includeTypes=["file"]))
    assert [c["name"] for c in files] == [f"w{i:02d}.txt" for i in range(WIDE)]
    assert [c["id"] for c in files] == [world.id(f"wide/w{i:02d}.txt") for i in range(WIDE)]
    assert {c["type"] for c in files} == {"org.sagebionetworks.repo.model.FileEntity"}
    both = [c["name"] for c in syn.getChildren(world.id("wide"), includeTypes=["file", "folder"])]
    assert both == ["inner"] + [f"w{i:02d}.txt" for i in range(WIDE)]
    exchanges = world.check()
    pages = [e for e in exchanges if e.path == "/repo/v1/entity/children"]
    assert len(pages) == 2 + 2 + 2  # project, folders, and two pages each for the wide folder's listings


# --- tableQuery ------------------------------------------------------------------------------------------------
def test_table_query_rows_and_csv(world):
    syn = world.syn
    rowset = list(_quiet(syn.tableQuery, f"select * from {world.id('tab')}", resultsAs="rowset"))
    assert [(row["rowId"], row["values"]) for row in rowset] == [
        (1, [world.id("raw/a.txt"), "first"]),
        (2, [world.id("v.txt"), "second"]),
        (3, [None, "third"]),
    ]
    csv_rows = list(_quiet(syn.tableQuery, f"select * from {world.id('tab')}"))
    assert csv_rows == [
        ["1", "1", world.id("raw/a.txt"), "first"],
        ["2", "1", world.id("v.txt"), "second"],
        ["3", "1", None, "third"],
    ]
    view_rows = list(_quiet(syn.tableQuery, f"select id, name, assay from {world.id('view')} order by name"))
    assert view_rows == [[world.id("raw/a.txt"), "a.txt", "rna"], [world.id("raw/sub/b.bin"), "b.bin", None]]
    count = list(_quiet(syn.tableQuery, f"select count(*) from {world.id('tab')}"))
    assert count == [[3]]  # one row, one cell
    world.check()


# --- syncFromSynapse -------------------------------------------------------------------------------------------
def _on_disk(root) -> Dict[str, bytes]:
    found = {}
    for here, _dirs, names in os.walk(root):
        for name in names:
            if name in ("SYNAPSE_METADATA_MANIFEST.tsv", "manifest.csv"):
                continue
            full = os.path.join(here, name)
            found[os.path.relpath(full, root).replace(os.sep, "/")] = _read(full)
    return found


def test_sync_from_synapse(world):
    """Every readable file comes back, the one without DOWNLOAD as metadata only (nothing on disk; synapseclient
    sets its ``path`` to the folder it would have gone to); the unreadable one is not listed by Synapse, so
    syncFromSynapse never meets it."""
    out = world.tmp / "sync"
    files = _quiet(synapseutils.syncFromSynapse, world.syn, world.project, path=str(out))
    by_name = {entity.name: entity for entity in files}
    assert set(by_name) == {path.rsplit("/", 1)[-1] for path in DOWNLOADABLE} | {"nodl.txt"}
    assert (by_name["nodl.txt"].id, by_name["nodl.txt"].versionNumber) == (world.id("nodl.txt"), 1)
    for path, data in DOWNLOADABLE.items():
        entity = by_name[path.rsplit("/", 1)[-1]]
        assert (entity.id, entity.md5, entity.path) == (world.id(path), md5(data), str(out / path))
    assert by_name["v.txt"].versionNumber == 3
    assert _on_disk(out) == DOWNLOADABLE
    world.check()


# --- the models API --------------------------------------------------------------------------------------------
def test_models_project_file_and_dataset_get(world):
    syn = world.syn
    project = models.Project(id=world.project).get(synapse_client=syn)
    assert (project.id, project.name) == (world.project, "conf")
    current = models.File(id=world.id("v.txt"), path=str(world.tmp / "mf")).get(synapse_client=syn)
    assert (current.name, current.version_number, current.file_handle.content_md5) == ("v.txt", 3, md5(b"three\n"))
    assert _read(current.path) == b"three\n"
    old = models.File(id=world.id("v.txt"), version_number=2, download_file=False).get(synapse_client=syn)
    assert (old.version_number, old.file_handle.content_md5, old.path) == (2, md5(b"two!\n"), None)
    dataset = models.Dataset(id=world.id("ds")).get(synapse_client=syn)
    assert [(item.id, item.version) for item in dataset.items] == [(world.id("raw/a.txt"), 1), (world.id("v.txt"), 2)]
    assert (dataset.count, dataset.size) == (2, len(b"alpha\n") + len(b"two!\n"))
    world.check()


def test_models_project_by_name(world):
    """``Project(name=...)`` looks its id up with ``POST /entity/child`` (parentId null)."""
    project = models.Project(name="conf").get(synapse_client=world.syn)
    assert (project.id, project.name) == (world.project, "conf")
    world.check()


def test_models_folder_sync_from_synapse(world):
    out = world.tmp / "folder"
    folder = models.Folder(id=world.id("raw")).sync_from_synapse(path=str(out), synapse_client=world.syn)
    assert [(f.name, f.id) for f in folder.files] == [("a.txt", world.id("raw/a.txt"))]
    assert [(sub.name, [f.name for f in sub.files]) for sub in folder.folders] == [("sub", ["b.bin"])]
    assert _on_disk(out) == {"a.txt": b"alpha\n", "sub/b.bin": B_BIN}
    world.check()


def test_models_project_sync_from_synapse(world):
    out = world.tmp / "project"
    project = models.Project(id=world.project).sync_from_synapse(path=str(out), synapse_client=world.syn)
    assert sorted(f.name for f in project.files) == ["ext.csv", "nodl.txt", "v.txt"]
    assert sorted(sub.name for sub in project.folders) == ["raw", "wide"]
    assert _on_disk(out) == DOWNLOADABLE
    world.check()


# --- every exchange against Synapse's model --------------------------------------------------------------------
#: the calls above, in one list, for the model check (errors are the other tests' business)
SCENARIO: List[Callable[[World], object]] = [
    test_get_files_and_versions,
    test_get_without_download_a_folder_and_a_dataset,
    test_get_an_external_handle,
    test_get_a_file_one_may_read_but_not_download,
    test_get_an_unreadable_file_is_403,
    test_find_entity_id,
    test_get_children,
    test_table_query_rows_and_csv,
    test_sync_from_synapse,
    test_models_project_file_and_dataset_get,
    test_models_project_by_name,
    test_models_folder_sync_from_synapse,
    test_models_project_sync_from_synapse,
]


def test_every_recorded_exchange_matches_synapses_model(world):
    """Each exchange of the calls above, fed to the conformance suite's model checker."""
    if not (Path(__file__).resolve().parents[1] / "tests" / "conformance" / "checker.py").is_file():
        pytest.skip("tests/conformance/checker.py is not there (the conformance suite's model checker)")
    from tests.conformance.checker import check_exchange

    for call in SCENARIO:
        try:
            call(world)
        except Exception:  # noqa: BLE001 - the call's own test reports it
            pass
        world.seen.extend(world.emu.exchanges(clear=True))
    recorded = world.seen
    assert len(recorded) > 100
    problems = []
    for exchange in recorded:
        for problem in check_exchange(exchange.method, exchange.path, exchange.status, exchange.response):
            problems.append(f"{exchange.method} {exchange.path} {exchange.status}: {problem}")
    assert problems == []
