"""``synclient get`` into a folder whose filesystem cannot hold every remote name (issue 18; forced with
``SYNCLIENT_FS_PROBE``): one ``renamed:`` line per renamed file, and the reason in ``--json``."""

from __future__ import annotations

from cli_support import isolated_env, run_cli

from synclient.emulator import Emulator


def test_case_twins_are_reported_line_by_line_and_in_json(tmp_path):
    spec = {
        "projects": [
            {
                "name": "p",
                "children": [
                    {"type": "file", "name": "Case.txt", "content": "upper"},
                    {"type": "file", "name": "case.txt", "content": "lower"},
                ],
            }
        ]
    }
    with Emulator() as emu:
        project = emu.seed_spec(spec)["p"]
        later = max(emu.resolve(project, "Case.txt"), emu.resolve(project, "case.txt"), key=lambda i: int(i[3:]))
        env = isolated_env(
            tmp_path, SYNCLIENT_ENDPOINT=emu.endpoint, SYNCLIENT_AUTH_TOKEN=emu.token, SYNCLIENT_FS_PROBE="case"
        )
        plain = run_cli("get", "-r", project, "--path", str(tmp_path / "t"), env=env)
        assert plain.returncode == 0, plain.stderr
        assert "2 downloaded, 0 skipped, 0 failed, 1 renamed" in plain.stdout
        assert (
            f"renamed: {later}: case.txt -> case ({later}).txt (another name of the folder differs only in "
            "case" in plain.stderr
        )
        document = run_cli("--json", "get", "-r", project, "--path", str(tmp_path / "t"), env=env).json()
    assert document["report"]["skipped"] == 2 and len(document["report"]["renamed"]) == 1
    renamed = [f for f in document["files"] if f["renamed"]]
    assert [f["entity_id"] for f in renamed] == [later] and renamed[0]["path"].endswith(f"case ({later}).txt")
