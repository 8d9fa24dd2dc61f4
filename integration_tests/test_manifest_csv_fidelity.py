"""Our manifest.csv against the one the official synapseclient 4.14 writes for the same tree, and read back by
synapseclient's own manifest reader (the one ``sync_to_synapse`` uses)."""

from __future__ import annotations

import asyncio
import csv
import io
import os
from pathlib import Path

import pytest

from synclient import Platform, SyncOptions, sync_from_platform

CSV_MANIFEST = "manifest.csv"
TSV_MANIFEST = "SYNAPSE_METADATA_MANIFEST.tsv"
BASE = [
    "path",
    "parentId",
    "name",
    "ID",
    "synapseStore",
    "contentType",
    "used",
    "executed",
    "activityName",
    "activityDescription",
]

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {
                    "type": "folder",
                    "name": "d",
                    "children": [
                        {
                            "type": "folder",
                            "name": "e",
                            "children": [
                                {
                                    "type": "file",
                                    "name": "deep.csv",
                                    "content": "1,2\n",
                                    "annotations": {"n": [3], "x": [1.5]},
                                }
                            ],
                        },
                        {
                            "type": "file",
                            "name": "a.txt",
                            "content": "A",
                            "annotations": {"tissue": ["brain"], "ok": [True], "flags": [True, False]},
                        },
                    ],
                },
                {"type": "folder", "name": "empty", "children": []},
                {
                    "type": "folder",
                    "name": "only-folders",
                    "children": [{"type": "folder", "name": "inner", "children": []}],
                },
                {
                    "type": "file",
                    "name": "b.txt",
                    "content": "B",
                    "annotations": {"tags": ["x", "y,z"], "counts": [1, 2], "ratios": [0.5, 2.0]},
                },
                {
                    "type": "file",
                    "name": "a b+(1).txt",
                    "content": "AB",
                    "annotations": {"note": ['say "hi", twice'], "tissue": ["liver"]},
                },
                {"type": "file", "name": "plain.bin", "content": "P"},
            ],
        }
    ]
}


def _csv_text(rows) -> str:
    out = io.StringIO(newline="")
    csv.writer(out, quoting=csv.QUOTE_MINIMAL, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


def _with_root(path: Path, roots) -> str:
    """The manifest's text with the sync's target written as <root> (the two clients synced into two folders)."""
    text = path.read_bytes().decode("utf-8")
    for root in roots:
        text = text.replace(str(root) + os.sep, "<root>/")
    return text


def _in_our_order(text: str) -> str:
    """synapseclient's manifest with its rows sorted by path and its annotation columns by key: the two orders it
    leaves to chance (download completion, set order). Everything else stays its bytes: its text must survive the
    parse and rewrite unchanged first."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert _csv_text(rows) == text  # the dialect: QUOTE_MINIMAL, CRLF
    header, body = rows[0], rows[1:]
    order = list(range(len(BASE))) + sorted(range(len(BASE), len(header)), key=lambda i: header[i])
    return _csv_text([[row[i] for i in order] for row in [header] + sorted(body, key=lambda r: r[0])])


def _folders_with(root: Path, name: str):
    return sorted(os.path.relpath(folder, root) for folder, _, files in os.walk(root) if name in files)


def _sync_both(emulator, synapse_login, tmp_path, **options):
    synapseutils = pytest.importorskip("synapseutils")
    project = emulator.seed_spec(SPEC)["p"]
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    synapseutils.syncFromSynapse(synapse_login(emulator), project, path=str(theirs))
    sync_from_platform(
        project,
        ours,
        platform=Platform(endpoint=emulator.endpoint, token=emulator.token),
        options=SyncOptions(progress=False, **options),
    )
    return project, theirs, ours


def test_manifest_csv_matches_synapseclient_byte_for_byte(emulator, synapse_login, tmp_path):
    _, theirs, ours = _sync_both(emulator, synapse_login, tmp_path)
    folders = _folders_with(theirs, CSV_MANIFEST)
    # every folder, those with no file below them too (a header line only); the TSV only where files are
    assert folders == [".", "d", "d/e", "empty", "only-folders", "only-folders/inner"]
    assert _folders_with(ours, CSV_MANIFEST) == folders
    assert _folders_with(ours, TSV_MANIFEST) == _folders_with(theirs, TSV_MANIFEST) == [".", "d", "d/e"]
    for folder in folders:
        their_text = _with_root(theirs / folder / CSV_MANIFEST, {theirs, Path(os.path.realpath(theirs))})
        our_text = _with_root(ours / folder / CSV_MANIFEST, {ours, Path(os.path.realpath(ours))})
        assert our_text == _in_our_order(their_text), folder
    assert (ours / "empty" / CSV_MANIFEST).read_bytes() == (",".join(BASE) + "\r\n").encode()


def test_synapseclient_reads_our_manifest_csv(emulator, synapse_login, tmp_path):
    """Ours through synapseclient's reader for upload (``sync_to_synapse``'s): ids, parents, paths, annotations."""
    pytest.importorskip("pandas")
    from synapseclient.models.services.manifest import read_manifest_for_upload

    project, _, ours = _sync_both(emulator, synapse_login, tmp_path)
    syn = synapse_login(emulator)
    items, total = asyncio.run(
        read_manifest_for_upload(
            str(ours / CSV_MANIFEST), syn, merge_existing_annotations=False, associate_activity_to_new_version=False
        )
    )
    root = Path(os.path.realpath(ours))
    by_path = {os.path.relpath(item.entity.path, root): item.entity for item in items}
    assert sorted(by_path) == ["a b+(1).txt", "b.txt", "d/a.txt", "d/e/deep.csv", "plain.bin"]
    assert total == sum(os.path.getsize(root / path) for path in by_path)
    platform = Platform(endpoint=emulator.endpoint, token=emulator.token)
    for path, entity in by_path.items():
        assert entity.id == platform.get_entity(entity.id).id
        assert entity.name == Path(path).name
    assert by_path["plain.bin"].parent_id == project
    assert by_path["d/e/deep.csv"].annotations == {"n": [3], "x": [1.5]}
    assert by_path["d/a.txt"].annotations == {"tissue": ["brain"], "ok": [True], "flags": [True, False]}
    assert by_path["b.txt"].annotations == {"tags": ["x", "y,z"], "counts": [1, 2], "ratios": [0.5, 2.0]}
    assert by_path["a b+(1).txt"].annotations == {"note": ['say "hi", twice'], "tissue": ["liver"]}
    assert by_path["plain.bin"].annotations == {}
