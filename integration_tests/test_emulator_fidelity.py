"""Fidelity: the official synapseclient 4.14 mirrors a seeded project from the emulator, byte-exact.

No patching of synapseclient: it only gets the emulator's endpoints and token.
"""

from __future__ import annotations

import hashlib
import os

import pytest

from synclient.emulator import seeded_bytes

synapseutils = pytest.importorskip("synapseutils")
pytestmark = pytest.mark.over_tls

MiB = 1024 * 1024
MANIFESTS = {"SYNAPSE_METADATA_MANIFEST.tsv", "manifest.csv"}


def _spec():
    """>= 3 levels, >= 120 files, one folder with > 50 children (two pages), files > 8 MiB; some files' handles
    have a fileName of their own (what synapseclient names a download by: unicode is fine there)."""
    wide = [{"type": "file", "name": f"w{i:03d}.txt", "content": f"wide file {i}\n" * (i % 7 + 1)} for i in range(75)]
    deep = [{"type": "file", "name": f"deep{i}.dat", "size": 1000 + i * 37, "seed": 100 + i} for i in range(30)]
    top = [
        {
            "type": "file",
            "name": f"top{i}.txt",
            "content": f"top {i}",
            **({"file_name": f"Top {i} (r\u00e9sum\u00e9).txt"} if i % 5 == 0 else {}),
        }
        for i in range(15)
    ]
    return {
        "projects": [
            {
                "name": "fidelity",
                "children": top
                + [
                    {
                        "type": "folder",
                        "name": "level1",
                        "children": [
                            {"type": "folder", "name": "wide", "children": wide},
                            {
                                "type": "folder",
                                "name": "level2",
                                "children": [
                                    {"type": "folder", "name": "level3", "children": deep},
                                    {"type": "file", "name": "big20.bin", "size": 20 * MiB + 123, "seed": 7},
                                ],
                            },
                            {"type": "file", "name": "big9.bin", "size": 9 * MiB, "seed": 8},
                        ],
                    },
                    {
                        "type": "file",
                        "name": "versions.txt",
                        "versions": [
                            {"content": "old", "file_name": "old.txt"},
                            {"content": "new", "file_name": "new.txt"},
                        ],
                    },
                    {"type": "file", "name": "annotated.txt", "content": "a", "annotations": {"k": ["v"], "n": [1, 2]}},
                ],
            }
        ]
    }


def _expected_files(spec):
    """{relative path: md5} computed from the spec itself, independently of the emulator: each file under its
    (current version's) handle's fileName, as synapseclient names it."""
    expected = {}

    def walk(children, prefix):
        for child in children:
            path = f"{prefix}{child['name']}"
            if child["type"] == "folder":
                walk(child.get("children", []), path + "/")
            elif child["type"] == "file":
                node = child["versions"][-1] if "versions" in child else child
                data = node["content"].encode() if "content" in node else seeded_bytes(node["size"], node["seed"])
                expected[prefix + node.get("file_name", child.get("file_name", child["name"]))] = hashlib.md5(
                    data
                ).hexdigest()

    walk(spec["projects"][0]["children"], "")
    return expected


def _local_files(root):
    found = {}
    for here, _dirs, files in os.walk(root):
        for name in files:
            if name in MANIFESTS:
                continue
            full = os.path.join(here, name)
            with open(full, "rb") as handle:
                found[os.path.relpath(full, root).replace(os.sep, "/")] = hashlib.md5(handle.read()).hexdigest()
    return found


def _sync_and_compare(emu, syn, tmp_path):
    spec = _spec()
    project_id = emu.seed_spec(spec)["fidelity"]
    expected = _expected_files(spec)
    assert len(expected) >= 120 and "Top 0 (r\u00e9sum\u00e9).txt" in expected and "new.txt" in expected
    out = tmp_path / "out"
    synapseutils.syncFromSynapse(syn, project_id, path=str(out))
    assert _local_files(out) == expected
    return project_id, expected


def test_synapseclient_sync_is_byte_exact(emulator_factory, synapse_login, tmp_path):
    emu = emulator_factory()
    syn = synapse_login(emu)
    project_id, expected = _sync_and_compare(emu, syn, tmp_path)
    stats = emu.stats()
    assert stats["auth_headers_on_data"] == 0
    assert stats["api_by_route"]["POST /repo/v1/entity/children"] >= 6  # the wide folder needs two pages
    assert any(status == "206" for status in stats["data_by_status"])  # > 8 MiB files come in ranged parts
    # synclient's drop-in lands path for path where synapseutils does (a cache of its own: nothing to copy)
    from synclient import syncFromSynapse

    syncFromSynapse(synapse_login(emu, cache_root=tmp_path / "other-cache"), project_id, path=str(tmp_path / "ours"))
    ours = _local_files(tmp_path / "ours")
    assert {path: md5 for path, md5 in ours.items() if not path.startswith(".synclient/")} == expected


FAULTS = dict(fault_api_5xx_rate=0.05, fault_api_5xx_statuses=(503,), fault_data_cut_rate=0.02, fault_seed=1234)


def test_synapseclient_sync_survives_faults(emulator_factory, synapse_login, tmp_path):
    """5% 503 on API routes, 2% cut data bodies, 10 s URLs: still byte-exact.

    10 s, not 5 s: synapseclient 4.14 treats any URL expiring within its 5 s safety buffer as
    already expired and refuses it for multipart (> 8 MiB) downloads; see the next test.
    """
    emu = emulator_factory(url_lifetime=10, **FAULTS)
    syn = synapse_login(emu)
    _sync_and_compare(emu, syn, tmp_path)
    stats = emu.stats()
    assert stats["api_5xx_injected"] > 0
    assert stats["data_cuts_injected"] > 0


def test_synapseclient_with_5s_urls(emulator_factory, synapse_login, tmp_path):
    """With 5 s URLs and faults, every file below 8 MiB still arrives byte-exact; the large files are
    refused by synapseclient itself ("The provided pre-signed URL has expired") because their URLs
    expire inside its 5 s buffer -- a client limitation the emulator reproduces faithfully."""
    emu = emulator_factory(url_lifetime=5, **FAULTS)
    syn = synapse_login(emu)
    spec = _spec()
    project_id = emu.seed_spec(spec)["fidelity"]
    expected = _expected_files(spec)
    out = tmp_path / "out"
    synapseutils.syncFromSynapse(syn, project_id, path=str(out))
    local = _local_files(out)
    big = {"level1/big9.bin", "level1/level2/big20.bin"}
    assert {k: v for k, v in local.items() if k not in big} == {k: v for k, v in expected.items() if k not in big}
    assert not big & set(local)
    assert emu.stats()["api_5xx_injected"] > 0


@pytest.mark.slow  # about 15-20 s a scheme: the slow tier (pytest -m slow, run by CI after the README's command)
def test_synapseclient_under_the_synapse_profile(emulator_factory, synapse_login, tmp_path):
    """Production throttles (3 concurrent, 600/min), 30 s URLs, realistic latency: synapseclient's
    5 connections exceed the concurrency limit, so it meets 429s and retries them -- and still
    ends byte-exact."""
    emu = emulator_factory(profile="synapse")
    syn = synapse_login(emu)
    _sync_and_compare(emu, syn, tmp_path)
    stats = emu.stats()
    assert stats["throttled_429"] > 0
    assert stats["auth_headers_on_data"] == 0
