"""``synclient get`` with several ids, ``--from-file`` (also ``-``) and ``--version`` (issue 16)."""

from __future__ import annotations

import pytest
from cli_support import isolated_env, run_cli

from synclient.emulator import Emulator

SPEC = {
    "projects": [
        {
            "name": "ids",
            "children": [
                {
                    "type": "folder",
                    "name": "x",
                    "children": [
                        {"type": "file", "name": "a.txt", "content": "x/a\n"},
                        {"type": "file", "name": "v.txt", "versions": [{"content": "v one\n"}, {"content": "v two\n"}]},
                    ],
                },
                {"type": "folder", "name": "y", "children": [{"type": "file", "name": "a.txt", "content": "y/a\n"}]},
                {"type": "dataset", "name": "d", "items": [{"ref": "x/a.txt"}]},
            ],
        }
    ]
}


@pytest.fixture(scope="module")
def ids_emulator():
    with Emulator() as emu:
        project = emu.seed_spec(SPEC)["ids"]
        emu.at = lambda path: emu.resolve(project, path)
        yield emu


@pytest.fixture
def env(tmp_path, ids_emulator):
    return isolated_env(tmp_path, SYNCLIENT_ENDPOINT=ids_emulator.endpoint, SYNCLIENT_AUTH_TOKEN=ids_emulator.token)


def test_several_ids_are_one_run_with_a_renamed_clash(env, ids_emulator, tmp_path):
    xa, ya, v = ids_emulator.at("x/a.txt"), ids_emulator.at("y/a.txt"), ids_emulator.at("x/v.txt")
    result = run_cli("--json", "get", xa, ya, f"{v}.1", "--path", str(tmp_path), env=env)
    assert result.returncode == 0, result.stderr
    document = result.json()
    assert document["entities"] == [xa, ya, f"{v}.1"]
    assert document["report"]["downloaded"] == 3 and len(document["report"]["renamed"]) == 1
    assert (tmp_path / "a.txt").read_text() == "x/a\n"
    assert (tmp_path / f"a ({ya}).txt").read_text() == "y/a\n"
    assert (tmp_path / "v.txt").read_text() == "v one\n"
    plain = run_cli("get", xa, ya, "--path", str(tmp_path), env=env)
    assert "0 downloaded, 2 skipped, 0 failed, 1 renamed" in plain.stdout
    assert f"renamed: {ya}.1: a.txt -> a ({ya}).txt" in plain.stderr


def test_ids_from_a_file_and_from_stdin(env, ids_emulator, tmp_path):
    listing = tmp_path / "ids.tsv"
    listing.write_text(f"path\tid\n/x/a.txt\t{ids_emulator.at('x/a.txt')}\n")  # a manifest's shape
    result = run_cli("get", "--from-file", str(listing), "--path", str(tmp_path / "f"), env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "f" / "a.txt").read_text() == "x/a\n"
    result = run_cli(
        "get",
        "--from-file",
        "-",
        "--path",
        str(tmp_path / "s"),
        env=env,
        input=f"# picked\n{ids_emulator.at('y/a.txt')}\n{ids_emulator.at('x/v.txt')}.2\n",
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "s").iterdir() if p.name != ".synclient") == ["a.txt", "v.txt"]
    assert (tmp_path / "s" / "v.txt").read_text() == "v two\n"


def test_an_unknown_id_in_a_list_fails_alone_with_a_line_of_its_own(env, ids_emulator, tmp_path):
    result = run_cli("get", ids_emulator.at("x/a.txt"), "syn999999999", "--path", str(tmp_path), env=env)
    assert result.returncode == 1
    assert "failed: syn999999999: syn999999999 does not exist or may not be read" in result.stderr
    assert (tmp_path / "a.txt").read_text() == "x/a\n"


def test_version_flag_picks_a_files_version(env, ids_emulator, tmp_path):
    result = run_cli("get", ids_emulator.at("x/v.txt"), "--version", "1", "--path", str(tmp_path), env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "v.txt").read_text() == "v one\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (lambda at: ["get", "-r", at("x"), "--version", "2"], "a folder has no versions to choose from"),
        (lambda at: ["get", at("x/a.txt"), at("x/v.txt"), "--version", "2"], "--version applies to one file id"),
        (lambda at: ["get", f"{at('x/v.txt')}.1", "--version", "2"], "name different versions"),
        (lambda at: ["get", at("x/a.txt"), at("y")], "is a folder; pass -r"),
        (lambda at: ["get", at("x/a.txt"), at("y"), "-r", "--delete"], "delete=True needs one project or folder"),
        (lambda at: ["get"], "get needs an id"),
        (lambda at: ["get", "--from-file", "/nonexistent/ids.txt"], "cannot read the id list /nonexistent/ids.txt"),
        (lambda at: ["get", at("x/a.txt"), "syn12x"], "not a platform id: 'syn12x'"),
        (lambda at: ["get", at("d") + ".7"], "not found:"),  # a dataset version that does not exist, as for a file
    ],
)
def test_usage_errors_exit_2_in_one_line(env, ids_emulator, tmp_path, args, message):
    result = run_cli(*args(ids_emulator.at), "--path", str(tmp_path / "out"), env=env)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and result.stderr.strip().count("\n") == 0
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
