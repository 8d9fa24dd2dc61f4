"""Our SYNAPSE_METADATA_MANIFEST.tsv against the one the official synapseclient 4.14 writes for the same tree."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
from synctrees import MANIFEST

from synclient import Platform, sync_from_platform

BASE = [
    "path",
    "parent",
    "name",
    "id",
    "synapseStore",
    "contentType",
    "used",
    "executed",
    "activityName",
    "activityDescription",
]


def read_manifest(path: Path, root: Path):
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        rows = list(reader)
        header = reader.fieldnames
    for row in rows:  # the two clients synced into different folders
        row["path"] = os.path.relpath(row["path"], root)
    return header, sorted(rows, key=lambda r: r["path"])


def test_manifest_matches_synapseclient(emulator, synapse_login, tmp_path):
    synapseutils = pytest.importorskip("synapseutils")
    spec = {
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
                                "annotations": {"tissue": ["brain"], "ok": [True]},
                            },
                        ],
                    },
                    {"type": "file", "name": "b.txt", "content": "B", "annotations": {"tags": ["x", "y,z"]}},
                    {"type": "file", "name": "plain.bin", "content": "P"},
                ],
            }
        ]
    }
    project = emulator.seed_spec(spec)["p"]
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    synapseutils.syncFromSynapse(synapse_login(emulator), project, path=str(theirs))
    sync_from_platform(project, ours, platform=Platform(endpoint=emulator.endpoint, token=emulator.token))
    folders = sorted(os.path.relpath(f, theirs) for f, _, files in os.walk(theirs) if MANIFEST in files)
    assert folders == [".", "d", "d/e"]
    for folder in folders:
        their_header, their_rows = read_manifest(theirs / folder / MANIFEST, theirs)
        our_header, our_rows = read_manifest(ours / folder / MANIFEST, Path(os.path.realpath(ours)))
        assert our_header[: len(BASE)] == their_header[: len(BASE)] == BASE
        assert set(our_header) == set(their_header)  # annotation columns: theirs come in set order
        assert our_rows == their_rows
