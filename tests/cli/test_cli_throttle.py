"""The CLI under the platform's request window: the user is told, once, why a large tree comes down in bursts."""

from __future__ import annotations

from cli_support import isolated_env, run_cli

SHARED_NOTE = "synclient: note: refused within the request budget: another client of this user shares the window; "


def _tree(files: int) -> dict:
    return {
        "projects": [
            {
                "name": "paced",
                "children": [{"type": "file", "name": f"f{i:02d}.txt", "size": 3, "seed": i} for i in range(files)],
            }
        ]
    }


def test_a_sync_paced_by_the_request_window_says_so_once_and_completes(tmp_path, emulator_factory):
    # 12 files need 15 calls; the window admits 10 per 2 s: the 11th call is refused and teaches the gate
    emulator = emulator_factory(max_requests_per_minute=10, rate_window_seconds=2)
    project = emulator.seed_spec(_tree(12))["paced"]
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=emulator.endpoint, SYNCLIENT_AUTH_TOKEN=emulator.token)
    result = run_cli("get", "-r", project, "--path", str(tmp_path / "out"), "--no-progress", env=env)
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("synclient: note:")]
    assert notes[0] == "synclient: note: the platform allows 10 requests every 2 s: pacing REST calls at 9 per 2.0 s"
    # said once. On a loaded machine a request can reach the server later than the gate's margin (1% of the 2 s
    # window) after it started, so a second refusal within the budget may come, and its own note (once) with it
    assert len(notes) <= 2 and all(note.startswith(SHARED_NOTE) for note in notes[1:]), notes
    assert len(list((tmp_path / "out").glob("f*.txt"))) == 12
    quiet = run_cli("get", "-q", "-r", project, "--path", str(tmp_path / "again"), env=env)
    assert quiet.returncode == 0 and "note:" not in quiet.stderr
