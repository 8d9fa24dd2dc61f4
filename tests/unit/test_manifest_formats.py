"""The manifest formats: our writer against synapseclient 4.14's own manifest.csv writer for the same files
(provenance, timestamps, quoting), and which files each format choice writes."""

from __future__ import annotations

import datetime
import logging
import types
from pathlib import Path

import pytest

from synclient.errors import ConfigError
from synclient.sync.options import SyncOptions
from synclient.sync.records.manifest import (
    CSV_MANIFEST_FILENAME,
    MANIFEST_FILENAME,
    ManifestFormat,
    ManifestMode,
    ManifestRow,
    provenance_from_activity,
    write_manifests,
)

UTC = datetime.timezone.utc
ACTIVITY = {
    "name": "align",
    "description": 'bwa, then "sort"',
    "used": [
        {"reference": {"targetId": "syn9", "targetVersionNumber": 2}, "wasExecuted": False},
        {"url": "https://example.org/ref.fa", "name": "reference", "wasExecuted": False},
        {"url": "https://github.com/org/tool", "wasExecuted": True},
    ],
}
ANNOTATIONS = {  # Annotations v2, as the platform sends them
    "when": {"type": "TIMESTAMP_MS", "value": ["1577836800123"]},
    "days": {"type": "TIMESTAMP_MS", "value": ["1577836800000", "1609459200000"]},
    "note": {"type": "STRING", "value": ['two\nlines, a "quote"']},
    "tags": {"type": "STRING", "value": ["x", "y,z"]},
    "n": {"type": "LONG", "value": ["3", "4"]},
    "x": {"type": "DOUBLE", "value": ["1.5"]},
    "ok": {"type": "BOOLEAN", "value": ["true"]},
}
PYTHON_ANNOTATIONS = {  # the same, as synapseclient's File model holds them
    "when": [datetime.datetime(2020, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)],
    "days": [datetime.datetime(2020, 1, 1, tzinfo=UTC), datetime.datetime(2021, 1, 1, tzinfo=UTC)],
    "note": ['two\nlines, a "quote"'],
    "tags": ["x", "y,z"],
    "n": [3, 4],
    "x": [1.5],
    "ok": [True],
}


def _rows(root: Path):
    return [
        ManifestRow(
            root / "a.txt", "syn1", "a.txt", "syn2", "text/plain", ANNOTATIONS, provenance_from_activity(ACTIVITY)
        ),
        ManifestRow(root / "b, c.bin", "syn1", "b, c.bin", "syn3", None),
    ]


def test_manifest_csv_matches_synapseclient_writer(tmp_path):
    """Same files, same bytes: synapseclient's generate_manifest_csv internals with their annotation columns in
    our (sorted) order, the only freedom its format leaves."""
    pytest.importorskip("synapseclient")
    from synapseclient.models import Activity, File, UsedEntity, UsedURL
    from synapseclient.models.services import manifest as theirs

    ours, their_dir = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    their_dir.mkdir()
    activity = Activity(
        name="align",
        description='bwa, then "sort"',
        used=[
            UsedEntity(target_id="syn9", target_version_number=2),
            UsedURL(name="reference", url="https://example.org/ref.fa"),
        ],
        executed=[UsedURL(url="https://github.com/org/tool")],
    )
    files = [
        File(
            id="syn2",
            name="a.txt",
            parent_id="syn1",
            path=str(ours / "a.txt"),
            content_type="text/plain",
            annotations=PYTHON_ANNOTATIONS,
            activity=activity,
        ),
        File(id="syn3", name="b, c.bin", parent_id="syn1", path=str(ours / "b, c.bin")),
    ]
    keys, data = theirs._extract_entity_metadata_for_manifest_csv(files)
    keys = keys[: len(theirs.DEFAULT_GENERATED_MANIFEST_CSV_KEYS)] + sorted(
        keys[len(theirs.DEFAULT_GENERATED_MANIFEST_CSV_KEYS) :]
    )
    syn = types.SimpleNamespace(logger=logging.getLogger("test"))
    theirs._write_manifest_data_csv(str(their_dir / CSV_MANIFEST_FILENAME), keys, data, syn)

    written, failures = write_manifests(
        lambda: iter(_rows(ours)), ours, ManifestMode.ALL, formats=[ManifestFormat.CSV], covered={ours}
    )
    assert failures == [] and written == [ours / CSV_MANIFEST_FILENAME]
    expected = (their_dir / CSV_MANIFEST_FILENAME).read_bytes()
    assert (ours / CSV_MANIFEST_FILENAME).read_bytes() == expected
    assert b"syn9.2;reference" in expected and b"https://github.com/org/tool" in expected  # provenance covered
    assert b"2020-01-01T00:00:00.123Z" in expected and b"[2020-01-01T00:00:00Z,2021-01-01T00:00:00Z]" in expected


@pytest.mark.parametrize(
    "formats, names",
    [
        ([ManifestFormat.TSV], [MANIFEST_FILENAME]),
        ([ManifestFormat.CSV], [CSV_MANIFEST_FILENAME]),
        ([ManifestFormat.CSV, ManifestFormat.TSV], [MANIFEST_FILENAME, CSV_MANIFEST_FILENAME]),
    ],
)
def test_formats_choose_the_files(tmp_path, formats, names):
    (tmp_path / "d").mkdir()
    (tmp_path / "empty").mkdir()
    rows = [ManifestRow(tmp_path / "d" / "a.txt", "syn1", "a.txt", "syn2", None)]
    written, failures = write_manifests(
        lambda: iter(rows),
        tmp_path,
        ManifestMode.ALL,
        formats=formats,
        covered={tmp_path, tmp_path / "d", tmp_path / "empty"},
    )
    assert failures == []
    expected = {folder / name for folder in (tmp_path, tmp_path / "d") for name in names}
    if CSV_MANIFEST_FILENAME in names:  # the CSV also where no file lies below (a header line), as synapseclient
        expected.add(tmp_path / "empty" / CSV_MANIFEST_FILENAME)
    assert set(written) == expected
    assert {p for p in tmp_path.rglob("*") if p.is_file()} == expected  # nothing else, no partial


def test_root_mode_writes_the_csv_at_the_root_only_even_without_files(tmp_path):
    (tmp_path / "empty").mkdir()
    written, _ = write_manifests(
        lambda: iter([]),
        tmp_path,
        ManifestMode.ROOT,
        formats=[ManifestFormat.TSV, ManifestFormat.CSV],
        covered={tmp_path, tmp_path / "empty"},
    )
    assert written == [tmp_path / CSV_MANIFEST_FILENAME]
    assert (tmp_path / CSV_MANIFEST_FILENAME).read_bytes() == (
        b"path,parentId,name,ID,synapseStore,contentType,used,executed,activityName,activityDescription\r\n"
    )


def test_csv_same_bytes_are_not_rewritten(tmp_path):
    rows = [ManifestRow(tmp_path / "a.txt", "syn1", "a.txt", "syn2", None)]
    write_manifests(lambda: iter(rows), tmp_path, ManifestMode.ALL, formats=[ManifestFormat.CSV])
    manifest = tmp_path / CSV_MANIFEST_FILENAME
    before = manifest.stat()
    write_manifests(lambda: iter(rows), tmp_path, ManifestMode.ALL, formats=[ManifestFormat.CSV])
    after = manifest.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert [p.name for p in tmp_path.iterdir()] == [CSV_MANIFEST_FILENAME]  # no partial left behind


def test_a_disk_full_midway_is_a_failed_manifest_not_a_crash(tmp_path, monkeypatch):
    """Rows that fill a buffer on a full disk: that manifest fails (one ManifestFailure, the sync goes on) and its
    partial file is gone; the abandoning must not raise the disk's error again past the writer."""
    from tests.full_disk import full_disk

    rows = [ManifestRow(tmp_path / f"f{n:04}.txt", "syn1", f"f{n:04}.txt", f"syn{n + 2}", None) for n in range(500)]
    full_disk(monkeypatch)
    written, failures = write_manifests(lambda: iter(rows), tmp_path, ManifestMode.ALL, formats=[ManifestFormat.CSV])
    assert written == [] and [f.path.name for f in failures] == [CSV_MANIFEST_FILENAME]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", list(ManifestFormat))
def test_a_lone_surrogate_from_the_server_is_written_as_a_replacement_character(tmp_path, fmt):
    """JSON can carry a lone surrogate (``"\\ud800"``) in an annotation's key or value; UTF-8 cannot: the manifest
    is still written (U+FFFD there), where the encoder failed the sync's end and left the partial file behind. A
    path that is not UTF-8 on disk is still written as its bytes."""
    rows = [
        ManifestRow(tmp_path / "a\udcff.txt", "syn1", "a.txt", "syn2", None, {"k\ud800": ["x\udbffy"]}),
    ]
    written, failures = write_manifests(lambda: iter(rows), tmp_path, ManifestMode.ALL, formats=[fmt])
    assert failures == [] and [p.name for p in written] == [fmt.filename]
    data = (tmp_path / fmt.filename).read_bytes()
    assert "k\ufffd".encode() in data and "x\ufffdy".encode() in data
    assert b"a\xff.txt" in data
    assert sorted(p.name for p in tmp_path.iterdir()) == [fmt.filename]


def test_an_interrupt_while_writing_the_header_leaves_no_partial_manifest(tmp_path, monkeypatch):
    import csv

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(csv.DictWriter, "writeheader", interrupted)
    rows = [ManifestRow(tmp_path / "a.txt", "syn1", "a.txt", "syn2", None)]
    with pytest.raises(KeyboardInterrupt):
        write_manifests(lambda: iter(rows), tmp_path, ManifestMode.ALL, formats=[ManifestFormat.CSV])
    assert list(tmp_path.iterdir()) == []


def test_sync_options_manifest_formats():
    assert SyncOptions().manifest_formats == {ManifestFormat.TSV, ManifestFormat.CSV}
    assert SyncOptions(manifest_formats="csv").manifest_formats == {ManifestFormat.CSV}
    assert SyncOptions(manifest_formats=["tsv"]).manifest_formats == {ManifestFormat.TSV}
    assert SyncOptions(manifest_formats=ManifestFormat.TSV).replace(delete=True).manifest_formats == {
        ManifestFormat.TSV
    }
    with pytest.raises(ConfigError, match="manifest_formats must be one of tsv, csv"):
        SyncOptions(manifest_formats="both")
    with pytest.raises(ConfigError, match="needs a format"):
        SyncOptions(manifest_formats=())
