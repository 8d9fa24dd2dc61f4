"""Review of issue 18 (names a local filesystem cannot hold): reproductions of defects found by adversarial runs
against the emulator, with the filesystem probe's answer forced (Linux folds nothing, so a case-insensitive
filesystem's collisions show as two names that fold to one). Each test is ``xfail(strict=True)`` until fixed."""
from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from synclient import Platform, download_many, sync_from_platform
from synclient.emulator import Emulator
from synclient.sync.local_names import FilesystemNames
from synctrees import local_tree

RULES = "case,nfd,windows"


def _file(name: str, content: str) -> dict:
    return {"type": "file", "name": name, "content": content}


def _platform(emu: Emulator) -> Platform:
    return Platform(endpoint=emu.endpoint, token=emu.token)


def _sync(emu, project, target, names=RULES, **kwargs):
    kwargs.setdefault("on_error", "continue")
    return sync_from_platform(project, target, platform=_platform(emu), filesystem_names=names, progress=False,
                              **kwargs)


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _folded_twins(root: Path):
    """Entries of one folder that a case- and normalization-insensitive filesystem would take for one."""
    twins = []
    for folder, dirs, files in os.walk(root):
        seen = {}
        for name in dirs + files:
            seen.setdefault(_fold(name), []).append(name)
        twins += [(os.path.relpath(folder, root), sorted(names)) for names in seen.values() if len(names) > 1]
    return twins


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


@pytest.mark.xfail(strict=True, reason="SyncRun.start_sources makes a listed container's folders with legal_form "
                                       "but records no LocalRename (only SyncRun._destination does, for files)")
def test_a_listed_folder_given_another_local_name_is_reported(emu, tmp_path):
    project = emu.seed_spec({"projects": [{"name": "p", "children": [
        {"type": "folder", "name": "CON", "children": [_file("y", "3")]}, _file("other", "o")]}]})["p"]
    folder = emu.resolve(project, "CON")
    results = download_many([folder, emu.resolve(project, "other")], tmp_path, recursive=True, platform=_platform(emu), filesystem_names="windows",
                            on_error="continue", progress=False)
    assert sorted(local_tree(tmp_path)) == ["CON_/y", "other"]
    # docs/cli.md: "each renamed file or folder is a `renamed: ...` line"; observed: report.renamed == []
    assert any(line.startswith(f"{folder}: CON -> CON_") for line in results.report.renamed), results.report.renamed
