"""Review of issue 18 (names a local filesystem cannot hold): what the review checked that already held. Its
reproductions of defects, fixed since, are tests in ``test_sync_local_names.py`` (manifests as the filesystem
compares names, the index folder's name by id, sticky local names, the reasons of kept and case-and-Unicode twins,
a listed folder's Windows name)."""
from __future__ import annotations

import pytest

from synclient import Platform, sync_from_platform
from synclient.emulator import Emulator
from synclient.sync.local_names import FilesystemNames
from synctrees import local_tree

def _file(name: str, content: str) -> dict:
    return {"type": "file", "name": name, "content": content}


def _platform(emu: Emulator) -> Platform:
    return Platform(endpoint=emu.endpoint, token=emu.token)


@pytest.fixture
def emu():
    with Emulator() as emulator:
        yield emulator


def test_mapping_off_is_the_linux_default_and_keeps_every_name(emu, tmp_path, monkeypatch):
    """Held: no probe forced on a Linux disk: names stay as they are (no twins renamed, no Windows mapping)."""
    monkeypatch.delenv("SYNCLIENT_FS_PROBE", raising=False)
    assert not FilesystemNames.probe(tmp_path).maps_names
    project = emu.seed_spec({"projects": [{"name": "p", "children": [
        _file("Case.txt", "u"), _file("case.txt", "l"), _file("a:b", "c"), _file("CON", "d")]}]})["p"]
    results = sync_from_platform(project, tmp_path, platform=_platform(emu), progress=False)
    assert sorted(local_tree(tmp_path)) == ["CON", "Case.txt", "a:b", "case.txt"]
    assert all(r.renamed is None for r in results) and results.report.renamed == []
