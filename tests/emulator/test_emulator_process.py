"""``EmulatorProcess``: the emulator in a child process, ready when it says so, always reaped."""

from __future__ import annotations

import dataclasses
import os
import select
import signal
import subprocess
import sys
import textwrap

import pytest
import requests

from synclient.emulator import Knobs
from synclient.emulator.cli import build_parser, knob_arguments, knobs_from_args
from synclient.emulator.process import EmulatorProcess, EmulatorProcessError, Seed

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {"type": "folder", "name": "d", "children": [{"type": "file", "name": "a.txt", "content": "text"}]}
            ],
        }
    ]
}

#: every knob away from its default, so that each one's flag is checked
EVERY_KNOB = Knobs(
    api_latency_ms=1.5,
    api_latency_jitter_ms=2,
    data_latency_ms=3,
    bandwidth_per_conn="32MB",
    max_concurrent_per_user=3,
    max_requests_per_minute=600,
    rate_window_seconds=6,
    rate_window_mode="block",
    url_lifetime=30,
    fault_api_5xx_rate={"children": 0.1, "bundle": 0.02},
    fault_api_5xx_statuses=(503, 500),
    fault_api_429_rate=0.05,
    fault_data_cut_rate=0.1,
    fault_data_stall_rate=0.2,
    fault_seed=7,
    maintenance_window=(1, 2.5),
    throttle_retry_after=3,
    data_ignore_range=True,
    data_wrong_content_range=True,
    stall_seconds=2,
    fault_api_malformed_rate=0.05,
    fault_data_corrupt_rate=0.1,
    hostile_handle_rate=0.5,
    hostile_handle_mode="size+1",
    hostile_rate=0.3,
    hostile_kinds=("names", "paging"),
    external_ranges=False,
    external_content_length=False,
    query_pending_polls=0,
    query_page_rows=10,
    download_list_limit=7,
    view_lag=True,
    record_exchanges=5,
    uncertified_user=True,
    deny_create=True,
    max_containers_per_view=7,
    view_build_seconds_per_1000_files=2.5,
)


def _parsed(knobs: Knobs) -> Knobs:
    return knobs_from_args(build_parser().parse_args(["serve", *knob_arguments(knobs)]))


def test_knob_arguments_give_the_same_knobs_back():
    defaults = Knobs()
    assert [
        f.name for f in dataclasses.fields(Knobs) if getattr(EVERY_KNOB, f.name) == getattr(defaults, f.name)
    ] == []  # a new knob must be set in EVERY_KNOB
    assert _parsed(EVERY_KNOB) == EVERY_KNOB
    assert knob_arguments(defaults) == []
    few = Knobs(fault_api_5xx_rate=0.25, hostile_kinds=(), bandwidth_per_conn=1000)
    assert knob_arguments(few) == [
        "--bandwidth-per-conn",
        "1000",
        "--fault-api-5xx-rate",
        "0.25",
        "--hostile-kinds",
        "none",
    ]
    assert _parsed(few) == few


def test_bad_knobs_fail_here_before_any_child_starts():
    with pytest.raises(ValueError, match="api_latency_ms must not be negative"):
        EmulatorProcess(api_latency_ms=-1)
    with pytest.raises(TypeError, match="unknown knob"):
        EmulatorProcess(no_such_knob=1)
    with pytest.raises(ValueError, match="unknown profile"):
        EmulatorProcess(profile="nope")


def test_start_waits_for_the_ready_line_then_stop_reaps_the_child_and_removes_its_store():
    with EmulatorProcess(seed=Seed(spec=SPEC), profile="synapse", api_latency_ms=0) as emu:
        assert emu.running and emu.returncode is None
        assert emu.knobs.max_requests_per_minute == 600 and emu.knobs.api_latency_ms == 0
        project = emu.info()["projects"]["p"]
        answer = requests.get(
            f"{emu.endpoint}/repo/v1/entity/{project}", headers={"Authorization": f"Bearer {emu.token}"}, timeout=10
        )
        assert answer.status_code == 200 and answer.json()["name"] == "p"  # serving as soon as start() returned
        store = emu.data_dir
        assert store.is_dir()
        assert emu.stats()["api_requests"] == 1
        assert emu.set_knobs(api_latency_ms=2).api_latency_ms == 2 and emu.knobs.api_latency_ms == 2
    assert not emu.running and emu.returncode == 0  # SIGTERM: a clean exit
    assert not store.exists()  # the temporary store went with it
    with pytest.raises(requests.ConnectionError):
        requests.get(emu.endpoint + "/emulator/stats", timeout=10)
    emu.stop()  # again: nothing to do


def test_the_admin_operations_mirror_the_in_process_emulator():
    with EmulatorProcess(seed=Seed(spec=SPEC)) as emu:
        project = emu.info()["projects"]["p"]
        a = emu.resolve(project, ["d", "a.txt"])
        assert emu.add_version(a, b"second") == 2
        folder = emu.add_folder(project, "e")
        b = emu.add_file(folder, "b.txt", "bee", file_name="bee.txt")
        assert emu.resolve(project, "e/b.txt") == b
        emu.rename_entity(b, "c.txt")
        emu.move_entity(b, project)
        assert emu.resolve(project, "c.txt") == b
        emu.delete_entity(b)
        with pytest.raises(KeyError, match="c.txt"):
            emu.resolve(project, "c.txt")
        assert emu.seed_spec({"projects": [{"name": "q", "children": []}]}).keys() == {"q"}
        with pytest.raises(ValueError):
            emu.set_knobs(fault_api_429_rate=2)


def test_kill_then_start_comes_back_on_the_same_store_and_ports(tmp_path):
    emu = EmulatorProcess(tmp_path / "store", seed=Seed(spec=SPEC))
    try:
        emu.start()
        project = emu.info()["projects"]["p"]
        a = emu.resolve(project, "d/a.txt")
        emu.add_version(a, "second")
        requests.get(f"{emu.endpoint}/repo/v1/entity/{a}", headers={"Authorization": f"Bearer {emu.token}"}, timeout=10)
        endpoints, token, pid = (emu.endpoint, emu.data_endpoint, emu.external_endpoint), emu.token, emu.pid
        emu.kill()
        assert not emu.running and emu.returncode == -signal.SIGKILL
        with pytest.raises(requests.ConnectionError):
            requests.get(endpoints[0] + "/emulator/stats", timeout=10)
        emu.start()  # no second seeding: the store is as the killed server left it
        assert emu.pid != pid
        assert (emu.endpoint, emu.data_endpoint, emu.external_endpoint) == endpoints and emu.token == token
        assert emu.info()["projects"] == {"p": project}
        answer = requests.get(
            f"{emu.endpoint}/repo/v1/entity/{a}", headers={"Authorization": f"Bearer {token}"}, timeout=10
        )
        assert answer.json()["versionNumber"] == 2
        assert emu.stats()["api_requests"] == 1 and emu.total("api_requests") == 2  # counted over both children
        emu.restart()
        assert emu.endpoint == endpoints[0] and emu.total("api_requests") == 2
    finally:
        emu.stop()
    assert emu.returncode == 0
    assert (tmp_path / "store").is_dir()  # a given data dir is never removed


def test_a_child_that_exits_at_once_is_one_error_naming_its_stderr_tail(tmp_path):
    missing = tmp_path / "no-such-spec.json"
    emu = EmulatorProcess(seed=Seed(spec_file=missing))
    with pytest.raises(EmulatorProcessError) as raised:
        with emu:
            pass  # pragma: no cover - never reached
    message = str(raised.value)
    assert "exited with code 2 before it was ready" in message
    assert f"python -m synclient.emulator: error: [Errno 2] No such file or directory: '{missing}'" in message
    assert not emu.running and emu.returncode == 2


def test_the_server_stops_when_the_process_that_started_it_dies(tmp_path):
    """The launcher's process ends without stopping its child (as a test process that is killed): the child
    reads the end of its stdin and stops too."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        pytest.skip("needs os.pidfd_open (Linux) to wait for a process that is not our child")
    script = textwrap.dedent("""
        import os, sys
        from synclient.emulator.process import EmulatorProcess
        emu = EmulatorProcess(sys.argv[1]).start()
        print(emu.pid, flush=True)
        os._exit(0)  # no stop(): the child is left running, its stdin pipe closed by the exit
    """)
    launcher = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert launcher.returncode == 0, launcher.stderr
    server = int(launcher.stdout)
    try:
        handle = pidfd_open(server)
    except ProcessLookupError:
        return  # already gone
    except OSError as error:  # pragma: no cover - a sandbox without the system call
        pytest.skip(f"pidfd_open: {error}")
    try:
        readable, _, _ = select.select([handle], [], [], 60)  # readable once the process has exited
        if not readable:  # pragma: no cover - the failure this test is for; do not leave it behind
            os.kill(server, signal.SIGKILL)
        assert readable, "the emulator outlived the process that started it"
    finally:
        os.close(handle)


def test_a_seed_is_exactly_one_source():
    with pytest.raises(ValueError, match="give one of"):
        Seed()
    with pytest.raises(ValueError, match="give one of"):
        Seed(spec=SPEC, synthetic="files=1")
