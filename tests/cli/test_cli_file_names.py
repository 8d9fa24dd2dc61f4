"""``synclient get`` names each file by its entity's name (what the web shows, unique within its folder), not by its
file handle's ``fileName`` (what synapseclient writes; two files of one folder may share one): issue 30, item 20."""

from __future__ import annotations

from cli_support import isolated_env, run_cli

from synclient.emulator import Emulator


def test_get_names_files_by_their_entities_whatever_their_handles_say(tmp_path):
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [
                    {"type": "file", "name": "one.csv", "file_name": "same.csv", "content": "1"},
                    {"type": "file", "name": "two.csv", "file_name": "same.csv", "content": "2"},
                    {
                        "type": "folder",
                        "name": "d",
                        "children": [
                            {
                                "type": "file",
                                "name": "plain name.txt",
                                "file_name": "../r\u00e9sum\u00e9.txt",
                                "content": "3",
                            },
                            {
                                "type": "file",
                                "name": "v.txt",
                                "versions": [
                                    {"content": "a", "file_name": "old.txt"},
                                    {"content": "b", "file_name": "new.txt"},
                                ],
                            },
                        ],
                    },
                ],
            }
        ]
    }
    with Emulator() as emu:
        project = emu.seed_spec(spec)["p"]
        env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=emu.endpoint, SYNCLIENT_AUTH_TOKEN=emu.token)
        got = run_cli("get", "-r", project, "--path", str(tmp_path / "t"), env=env)
        assert got.returncode == 0, got.stderr
    manifests = ("manifest.csv", "SYNAPSE_METADATA_MANIFEST.tsv")
    files = {
        p.relative_to(tmp_path / "t").as_posix(): p.read_text()
        for p in (tmp_path / "t").rglob("*")
        if p.is_file() and ".synclient" not in p.parts and p.name not in manifests
    }
    assert files == {"one.csv": "1", "two.csv": "2", "d/plain name.txt": "3", "d/v.txt": "b"}
