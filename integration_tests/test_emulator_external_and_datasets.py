"""Fidelity: the official synapseclient 4.14 against the emulator's external file handles and datasets.

No patching of synapseclient: it only gets the emulator's endpoints and token. What these tests pin about
synapseclient itself (not the emulator) is said in each test's docstring and in docs/emulator.md.
"""

from __future__ import annotations

import warnings

import pytest

from synclient.emulator import seeded_bytes

synapseclient = pytest.importorskip("synapseclient")
from synapseclient.core.exceptions import SynapseMd5MismatchError  # noqa: E402
from synapseclient.models import Dataset, DatasetCollection  # noqa: E402

MiB = 1024 * 1024
BIG_SIZE, BIG_SEED = 9 * MiB + 11, 5  # above synapseclient's 8 MiB part size
#: name -> (content, record_md5, record_size)
EXTERNAL_FILES = {
    "both.csv": (b"id,value\n1,one\n2,two\n", True, True),
    "neither.csv": (b"no md5, no size\n" * 50, False, False),
    "md5only.csv": (b"md5 but no size\n" * 30, True, False),
    "sizeonly.csv": (b"size but no md5\n" * 20, False, True),
    "big.bin": (seeded_bytes(BIG_SIZE, BIG_SEED), True, True),
}


def _content_node(name: str) -> dict:
    if name == "big.bin":
        return {"size": BIG_SIZE, "seed": BIG_SEED}
    return {"content": EXTERNAL_FILES[name][0].decode("ascii")}


def _external_spec():
    children = [
        {"type": "file", "name": name, "external": True, "record_md5": md5, "record_size": size, **_content_node(name)}
        for name, (_content, md5, size) in EXTERNAL_FILES.items()
    ]
    children.append({"type": "file", "name": "y.csv", "external": "sftp://sftp.example.org/data/y.csv"})
    return {"projects": [{"name": "ext", "children": children}]}


def _get(syn, entity_id, **kwargs):
    with warnings.catch_warnings():  # syn.get is deprecated in 4.14 (still what most scripts call)
        warnings.simplefilter("ignore", DeprecationWarning)
        return syn.get(entity_id, **kwargs)


def _read(path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


@pytest.mark.parametrize("ranges, content_length", [(True, True), (False, True), (True, False), (False, False)])
def test_syn_get_of_external_files_is_byte_exact(emulator_factory, synapse_login, tmp_path, ranges, content_length):
    """Every mix of recorded MD5 / size, whether the web server honours Range and sends Content-Length; synapseclient
    fetches external http URLs in one plain GET (never in ranged parts, even above 8 MiB) and sends no token."""
    emu = emulator_factory(external_ranges=ranges, external_content_length=content_length)
    project = emu.seed_spec(_external_spec())["ext"]
    syn = synapse_login(emu)
    for name, (content, _md5, _size) in EXTERNAL_FILES.items():
        entity = _get(syn, emu.resolve(project, name), downloadLocation=str(tmp_path / "out"))
        assert _read(entity.path) == content, name
        assert entity["externalURL"].startswith(emu.external_endpoint + "/ext/")
        assert entity["synapseStore"] is False  # how synapseclient marks a file whose handle is external
    stats = emu.stats()
    assert stats["external_requests"] == len(EXTERNAL_FILES)
    assert stats["external_bytes"] == sum(len(content) for content, _, _ in EXTERNAL_FILES.values())
    assert stats["auth_headers_on_external"] == 0
    assert stats["data_requests"] == 0


def test_syn_get_of_an_sftp_handle_without_download(emulator_factory, synapse_login):
    """downloadFile=False: the entity, its handle's sftp URL, no path, no transfer, no crash."""
    emu = emulator_factory()
    project = emu.seed_spec(_external_spec())["ext"]
    syn = synapse_login(emu)
    entity = _get(syn, emu.resolve(project, "y.csv"), downloadFile=False)
    assert entity["externalURL"] == "sftp://sftp.example.org/data/y.csv"
    assert entity["path"] is None
    assert (entity._file_handle["contentMd5"], entity._file_handle["contentSize"]) == (None, None)
    # an sftp handle is the one external kind synapseclient keeps synapseStore=True for (entity.py)
    assert entity["synapseStore"] is True
    assert emu.stats()["external_requests"] == 0


@pytest.mark.parametrize("ranges", [True, False])
def test_external_downloads_survive_cut_bodies(emulator_factory, synapse_login, tmp_path, ranges):
    """With Content-Length synapseclient sees a cut body ("the connection ended early") and asks again: from where
    it stopped (a Range; 206 appends) when the server honours Range, from the start (200 rewrites) when not."""
    emu = emulator_factory(external_ranges=ranges, fault_data_cut_rate=0.5, fault_seed=4)
    project = emu.seed_spec(_external_spec())["ext"]
    syn = synapse_login(emu)
    for name, (content, _md5, _size) in EXTERNAL_FILES.items():
        entity = _get(syn, emu.resolve(project, name), downloadLocation=str(tmp_path / "out"))
        assert _read(entity.path) == content, name
    stats = emu.stats()
    assert stats["data_cuts_injected"] > 0
    assert ("206" in stats["external_by_status"]) is ranges


def test_without_content_length_a_cut_is_caught_only_by_the_md5(emulator_factory, synapse_login, tmp_path):
    """Pinned synapseclient behaviour: with no Content-Length, a body cut short ends like a whole one. A handle that
    records an MD5 turns that into SynapseMd5MismatchError (not retried); one without keeps the truncated file."""
    emu = emulator_factory(external_content_length=False, fault_data_cut_rate=1.0)
    project = emu.seed_spec(_external_spec())["ext"]
    syn = synapse_login(emu)
    with pytest.raises(SynapseMd5MismatchError):
        _get(syn, emu.resolve(project, "md5only.csv"), downloadLocation=str(tmp_path / "md5"))
    content = EXTERNAL_FILES["neither.csv"][0]
    entity = _get(syn, emu.resolve(project, "neither.csv"), downloadLocation=str(tmp_path / "none"))
    truncated = _read(entity.path)
    assert len(truncated) < len(content) and content.startswith(truncated)


DATASET_SPEC = {
    "projects": [
        {
            "name": "ds",
            "children": [
                {
                    "type": "folder",
                    "name": "data",
                    "children": [
                        {"type": "file", "name": "a.csv", "content": "a"},
                        {"type": "file", "name": "v.csv", "versions": [{"content": "v1"}, {"content": "v2"}]},
                        {"type": "dataset", "name": "inner", "items": [{"ref": "data/a.csv"}]},
                    ],
                },
                {"type": "file", "name": "ext.csv", "external": True, "content": "e"},
                {
                    "type": "dataset",
                    "name": "d",
                    "items": [
                        {"ref": "data/a.csv"},
                        {"ref": "data/v.csv", "version": 1},
                        {"ref": "data/v.csv"},
                        {"ref": "ext.csv"},
                    ],
                },
                {"type": "datasetcollection", "name": "c", "items": [{"ref": "d"}, {"ref": "data/inner"}]},
            ],
        }
    ]
}


@pytest.fixture
def datasets(emulator_factory, synapse_login):
    """(emulator, logged-in Synapse, path -> id)."""
    emu = emulator_factory()
    project = emu.seed_spec(DATASET_SPEC)["ds"]
    return emu, synapse_login(emu), lambda path: emu.resolve(project, path)


def test_syn_get_of_a_dataset_and_a_collection(datasets):
    """syn.get answers a ``synapseclient.table.Dataset`` whose items are in ``datasetItems`` (synapseclient renames
    ``items``); a collection has no legacy class, so it comes back as a plain ``Entity``, items renamed the same."""
    emu, syn, ids = datasets
    dataset = _get(syn, ids("d"))
    assert isinstance(dataset, synapseclient.table.Dataset)
    assert dataset.properties["datasetItems"] == [
        {"entityId": ids("data/a.csv"), "versionNumber": 1},
        {"entityId": ids("data/v.csv"), "versionNumber": 1},
        {"entityId": ids("data/v.csv"), "versionNumber": 2},
        {"entityId": ids("ext.csv"), "versionNumber": 1},
    ]
    assert len(dataset) == 4
    collection = _get(syn, ids("c"))
    assert collection["concreteType"] == "org.sagebionetworks.repo.model.table.DatasetCollection"
    assert collection.properties["datasetItems"] == [
        {"entityId": ids("d"), "versionNumber": 1},
        {"entityId": ids("data/inner"), "versionNumber": 1},
    ]
    assert emu.stats()["api_by_status"].keys() == {"200"}


def test_models_api_gets_datasets_and_collections(datasets):
    """``Dataset(id=...).get()`` reads bundle2 and then ``GET /entity/{id}/column`` (no columns here)."""
    emu, syn, ids = datasets
    dataset = Dataset(id=ids("d")).get(synapse_client=syn)
    assert [(item.id, item.version) for item in dataset.items] == [
        (ids("data/a.csv"), 1),
        (ids("data/v.csv"), 1),
        (ids("data/v.csv"), 2),
        (ids("ext.csv"), 1),
    ]
    assert (dataset.count, dataset.size, len(dataset.columns)) == (4, 1 + 2 + 2 + 1, 0)
    assert dataset.parent_id == emu.info()["projects"]["ds"]
    collection = DatasetCollection(id=ids("c")).get(synapse_client=syn)
    assert [(item.id, item.version) for item in collection.items] == [(ids("d"), 1), (ids("data/inner"), 1)]
    assert emu.stats()["api_by_route"]["GET /repo/v1/entity/{id}/column"] == 2
