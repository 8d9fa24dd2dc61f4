"""Back-to-back commands of one user: the second starts its request window knowing the first's calls (the gate's
state file, synclient/platform/gate_state.py), so it is not refused and blames no other client."""

from __future__ import annotations

import json

from cli_support import isolated_env, run_cli

WINDOW_SECONDS = 3
ALLOWED = 8
FILES = 6  # 9 calls a sync: the window admits 8, the first sync's ninth is refused and teaches the gate
# Each call answered after 100 ms: the first sync's first two calls (the root's header, then its listing) start
# at least that far apart. Its client sees the window leave the first's calls 1% of the window after the server
# does (the gate's margin: 30 ms of 3 s, less than a loaded machine's scheduling noise), but the server counts in
# Synapse's fixed blocks from a user's first call: the block of the first sync ends when its first call is 3 s
# old, and the gate, which counts the window sliding, waits for its second call to be 3 s old as well, 100 ms
# later. That is the room a call has to reach the server late, on any machine.
LATENCY_MS = 100.0


def _tree(name: str) -> dict:
    return {
        "projects": [
            {
                "name": name,
                "children": [{"type": "file", "name": f"f{i}.txt", "size": 3, "seed": i} for i in range(FILES)],
            }
        ]
    }


def _notes(stderr: str) -> list:
    return [line for line in stderr.splitlines() if line.startswith("synclient: note:")]


def test_the_second_of_two_back_to_back_commands_knows_the_first_ones_calls(tmp_path, emulator_factory):
    emulator = emulator_factory(
        max_requests_per_minute=ALLOWED,
        rate_window_seconds=WINDOW_SECONDS,
        rate_window_mode="block",
        api_latency_ms=LATENCY_MS,
    )
    projects = emulator.seed_spec({"projects": _tree("first")["projects"] + _tree("second")["projects"]})
    cache = tmp_path / "cache"
    env = isolated_env(
        tmp_path,
        SYNCLIENT_ENDPOINT=emulator.endpoint,
        SYNCLIENT_AUTH_TOKEN=emulator.token,
        SYNCLIENT_CACHE_DIR=str(cache),
    )
    first = run_cli("get", "-r", projects["first"], "--path", str(tmp_path / "a"), "--no-progress", env=env)
    assert first.returncode == 0, first.stderr
    refused_by_the_first = emulator.stats()["throttled_429"]
    assert refused_by_the_first >= 1 and _notes(first.stderr)[0].startswith("synclient: note: the platform allows")
    (state,) = (cache / "gate").glob("*.json")
    assert emulator.token not in state.name and emulator.token not in state.read_text()
    assert json.loads(state.read_text())["budget"] == ALLOWED - 1

    second = run_cli("get", "-r", projects["second"], "--path", str(tmp_path / "b"), "--no-progress", env=env)
    assert second.returncode == 0, second.stderr
    assert len(list((tmp_path / "b").glob("f*.txt"))) == FILES
    # paced by the first command's calls from its first request on: not refused, and so nothing to explain
    assert emulator.stats()["throttled_429"] == refused_by_the_first
    assert "another client" not in second.stderr and not _notes(second.stderr), second.stderr
