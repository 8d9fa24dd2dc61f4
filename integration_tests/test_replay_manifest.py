"""A manifest replayed later downloads the versions it recorded, and a file whose content is not the one it
recorded fails alone, before its download (issue 33, part 3): ``synclient get --from-file`` against the emulator."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import pytest
from cli_subprocess import run_synclient as synclient

from synclient import Platform, download_many
from synclient.emulator import Emulator
from synclient.sync.sources.id_lists import ListMismatchError, read_id_file

CART_COLUMNS = (
    "ID,name,versionNumber,contentType,dataFileSizeBytes,createdBy,createdOn,modifiedBy,modifiedOn,parentId,"
    "synapseURL,dataFileMD5Hex"
)


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


@pytest.fixture
def emu(tmp_path):
    spec = {
        "projects": [
            {
                "name": "replay",
                "children": [
                    {"type": "file", "name": "top.txt", "content": "top, first version\n"},
                    {
                        "type": "folder",
                        "name": "d",
                        "children": [
                            {"type": "file", "name": "a.txt", "content": "a, first version\n"},
                            {"type": "file", "name": "b.txt", "content": "b\n"},
                        ],
                    },
                    {"type": "entityview", "name": "files", "scope": ["d"], "columns": []},
                ],
            }
        ]
    }
    with Emulator(data_dir=str(tmp_path / "emu")) as emulator:
        emulator.project = emulator.seed_spec(spec)["replay"]
        emulator.at = lambda path: emulator.resolve(emulator.project, path)
        yield emulator


def cart_row(entity_id: str, name: str, version: int, content: bytes, *, recorded_md5: str = "") -> str:
    return (
        f"{entity_id},{name},{version},text/plain,{len(content)},1,2026-01-01,1,2026-01-01,syn1,"
        f"https://www.synapse.org/#!Synapse:{entity_id}.{version},{recorded_md5 or md5(content)}"
    )


def test_a_cart_manifest_recorded_at_version_1_replays_version_1_byte_exact(emu, tmp_path):
    a, top = emu.at("d/a.txt"), emu.at("top.txt")
    manifest = tmp_path / "cart.csv"
    rows = [cart_row(a, "a.txt", 1, b"a, first version\n"), cart_row(top, "top.txt", 1, b"top, first version\n")]
    manifest.write_text("\n".join([CART_COLUMNS, *rows]) + "\n")
    assert emu.add_version(a, b"a, second version: other bytes\n") == 2
    assert emu.add_version(top, b"top, second\n") == 2

    result = synclient(emu, tmp_path, "get", "--from-file", str(manifest), "--path", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "a.txt").read_bytes() == b"a, first version\n"
    assert (tmp_path / "out" / "top.txt").read_bytes() == b"top, first version\n"
    # the same list without its versions gets today's
    plain = tmp_path / "ids.txt"
    plain.write_text(f"{a}\n{top}\n")
    result = synclient(emu, tmp_path, "get", "--from-file", str(plain), "--path", str(tmp_path / "now"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "now" / "a.txt").read_bytes() == b"a, second version: other bytes\n"


def test_a_manifest_whose_md5_differs_fails_that_file_only_before_downloading_it(emu, tmp_path):
    a, b = emu.at("d/a.txt"), emu.at("d/b.txt")
    wrong = md5(b"what the list once held\n")
    manifest = tmp_path / "cart.csv"
    rows = [cart_row(a, "a.txt", 1, b"a, first version\n", recorded_md5=wrong), cart_row(b, "b.txt", 1, b"b\n")]
    manifest.write_text("\n".join([CART_COLUMNS, *rows]) + "\n")
    emu.reset_stats()

    result = synclient(emu, tmp_path, "get", "--from-file", str(manifest), "--path", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr
    platform_md5 = md5(b"a, first version\n")
    reason = f"{a}.1: the list expects dataFileMD5Hex {wrong} but the platform has {platform_md5}"
    assert reason in result.stderr, result.stderr
    assert (tmp_path / "out" / "b.txt").read_bytes() == b"b\n"
    assert not (tmp_path / "out" / "a.txt").exists()
    assert emu.stats()["data_bytes"] == len(b"b\n")  # the mismatched file was never fetched


def test_a_size_that_differs_in_a_query_result_fails_that_file(emu, tmp_path):
    a, b = emu.at("d/a.txt"), emu.at("d/b.txt")
    result_csv = tmp_path / "query.csv"
    result_csv.write_text(
        "ROW_ID,ROW_VERSION,id,name,currentVersion,dataFileSizeBytes\n"
        f"{a[3:]},3,{a},a.txt,1,999\n"
        f"{b[3:]},1,{b},b.txt,1,2\n"
    )
    result = synclient(emu, tmp_path, "get", "--from-file", str(result_csv), "--path", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr
    assert f"{a}.1: the list expects dataFileSizeBytes 999 but the platform has 17" in result.stderr
    assert (tmp_path / "out" / "b.txt").read_bytes() == b"b\n"


def test_a_bad_version_cell_is_a_usage_error(emu, tmp_path):
    manifest = tmp_path / "m.csv"
    manifest.write_text(f"id,versionNumber\n{emu.at('d/a.txt')}.1,2\n")
    result = synclient(emu, tmp_path, "get", "--from-file", str(manifest), "--path", str(tmp_path / "out"))
    assert result.returncode == 2
    assert f"{manifest}, line 2: the id names version 1 but versionNumber says 2" in result.stderr


def files_under(root: Path) -> dict:
    return {
        path.name: path.read_bytes()
        for path in root.rglob("*")
        if path.is_file() and ".synclient" not in path.parts and not path.name.startswith(("manifest", "SYNAPSE_"))
    }


def test_synclients_own_manifest_csv_replayed_reproduces_the_same_files(emu, tmp_path):
    synced = tmp_path / "synced"
    result = synclient(emu, tmp_path, "get", "-r", emu.project, "--path", str(synced))
    assert result.returncode == 0, result.stderr
    for listing in ("manifest.csv", "SYNAPSE_METADATA_MANIFEST.tsv"):
        replayed = tmp_path / listing
        result = synclient(emu, tmp_path, "get", "--from-file", str(synced / listing), "--path", str(replayed))
        assert result.returncode == 0, result.stderr
        assert files_under(replayed) == files_under(synced)
        assert len(files_under(replayed)) == 3


def test_a_local_copy_already_up_to_date_is_still_checked_against_the_list(emu, tmp_path):
    b = emu.at("d/b.txt")
    plain = tmp_path / "ids.txt"
    plain.write_text(f"{b}\n")
    assert synclient(emu, tmp_path, "get", "--from-file", str(plain), "--path", str(tmp_path / "out")).returncode == 0
    wrong = md5(b"not b\n")
    manifest = tmp_path / "cart.csv"
    manifest.write_text("\n".join([CART_COLUMNS, cart_row(b, "b.txt", 1, b"b\n", recorded_md5=wrong)]) + "\n")
    emu.reset_stats()
    result = synclient(emu, tmp_path, "get", "--from-file", str(manifest), "--path", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr
    assert f"{b}.1: the list expects dataFileMD5Hex {wrong} but the platform has {md5(b'b' + bytes([10]))}" in (
        result.stderr
    )
    assert (tmp_path / "out" / "b.txt").read_bytes() == b"b\n"  # left as it was
    assert emu.stats()["data_bytes"] == 0


def test_a_view_query_csv_saved_by_synapseclient_replays_at_its_versions(emu, tmp_path, synapse_login):
    """The CSV synapseclient's ``syn.tableQuery`` saves (quoted, ``ROW_ID, ROW_VERSION, ROW_ETAG`` first)."""
    syn = synapse_login(emu)
    syn.table_query_sleep = 0.01
    sql = f"SELECT id, name, currentVersion, dataFileMD5Hex, dataFileSizeBytes FROM {emu.at('files')}"
    with warnings.catch_warnings():  # tableQuery is deprecated in 4.14 (still what scripts call)
        warnings.simplefilter("ignore", DeprecationWarning)
        saved = Path(syn.tableQuery(sql).filepath)
    assert saved.read_text(encoding="utf-8").startswith('"ROW_ID","ROW_VERSION","ROW_ETAG","id"')
    emu.add_version(emu.at("d/a.txt"), b"a, second version\n")
    result = synclient(emu, tmp_path, "get", "--from-file", str(saved), "--path", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert files_under(tmp_path / "out") == {"a.txt": b"a, first version\n", "b.txt": b"b\n"}


def test_the_python_api_replays_a_list_read_with_read_id_file(emu, tmp_path):
    """``download_many(read_id_file(...))``: an unpinned row's MD5 is checked against the current version."""
    a, b = emu.at("d/a.txt"), emu.at("d/b.txt")
    listed = tmp_path / "picked.csv"
    listed.write_text(f"id,md5\n{a},{md5(b'not a')}\n{b},{md5(b'b' + bytes([10]))}\n")
    with Platform(emu.endpoint, token=emu.token) as platform:
        results = download_many(read_id_file(str(listed)), tmp_path / "out", platform=platform, on_error="continue")
    [failure] = results.failures
    assert failure.entity_id == a and isinstance(failure.error, ListMismatchError)
    now = md5(b"a, first version" + bytes([10]))
    assert str(failure.error) == f"{a}.1: the list expects md5 {md5(b'not a')} but the platform has {now}"
    assert (tmp_path / "out" / "b.txt").read_bytes() == b"b\n"
