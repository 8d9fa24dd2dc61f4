"""What the gate learned, shared by the runs of one user through a state file (``synclient.platform.gate_state``).

Fake clocks throughout: the gate's own (monotonic, different in every process) and the wall clock the file keeps.
"""

from __future__ import annotations

import json
import logging
import os
import threading

import filelock
import pytest

from synclient.platform.gate import (
    DEFAULT_WINDOW_SECONDS,
    MARGIN_SHARE,
    AdaptiveGate,
    Throttle,
    ThrottleKind,
    shared_gate,
    with_reserve,
)
from synclient.platform.gate_state import (
    CACHE_DIR_ENV,
    MAX_SHARED_STARTS,
    STALE_AFTER_SECONDS,
    SWITCH_ENV,
    GateRecord,
    GateStateFile,
    cache_dir,
    user_key,
)
from synclient.platform.rest import Platform

ENDPOINT = "http://127.0.0.1:1/repo/v1"
TOKEN = "secret-token-of-the-user"


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def state_file(path, wall, **settings):
    return GateStateFile(
        path, default_window=DEFAULT_WINDOW_SECONDS, margin_share=MARGIN_SHARE, wall_clock=wall, **settings
    )


def frequency(allowed=10, window=10.0):
    return Throttle(ThrottleKind.FREQUENCY, allowed=allowed, window_seconds=window)


# -- the file -----------------------------------------------------------------------------------------------------


def test_a_record_round_trips_through_the_file(tmp_path):
    wall = Clock(1_000.0)
    record = GateRecord(
        starts=(990.25, 995.5, 999.125),
        window_seconds=60.0,
        budget=500,
        budget_ceiling=594,
        stated_concurrency=3,
        cool_until=1_010.0,
    )
    assert state_file(tmp_path / "s.json", wall).merge(record) == record
    assert state_file(tmp_path / "s.json", wall).load() == record
    assert not list(tmp_path.glob("*.tmp"))  # written through a temporary file, replaced whole


def test_calls_older_than_the_window_and_a_passed_hold_are_dropped(tmp_path):
    wall = Clock(100.0)
    state = state_file(tmp_path / "s.json", wall)
    state.merge(GateRecord(starts=(80.0, 95.0, 99.0), window_seconds=10.0, budget=9, cool_until=103.0))
    assert state.load().starts == (95.0, 99.0)  # the window (10 s, plus its 1% margin) ends now
    wall.now = 108.0
    later = state.load()
    assert later.starts == (99.0,) and later.cool_until is None and later.budget == 9  # what was learned stays
    wall.now = 200.0
    state.merge(GateRecord())
    assert json.loads((tmp_path / "s.json").read_text())["starts"] == []  # the file keeps the window only


def test_a_budget_lowered_by_sharing_is_back_at_the_stated_size_after_a_quiet_window(tmp_path):
    wall = Clock(100.0)
    state = state_file(tmp_path / "s.json", wall)
    state.merge(GateRecord(starts=(99.0,), window_seconds=10.0, budget=3, budget_ceiling=9))
    assert state.load().budget == 3  # the crowd may still be there
    wall.now = 120.0
    assert state.load().budget == 9
    measured = state_file(tmp_path / "m.json", wall)
    measured.merge(GateRecord(starts=(119.0,), window_seconds=10.0, budget=5))  # an unstated size: what was measured
    wall.now = 200.0
    assert measured.load().budget == 5


def test_state_files_no_command_wrote_for_a_week_are_removed(tmp_path):
    wall = Clock(10 * STALE_AFTER_SECONDS)
    folder = tmp_path / "gate"
    folder.mkdir()
    old, recent, left_over, lock = (folder / n for n in ("old.json", "recent.json", "x.json.1.2.tmp", "old.json.lock"))
    for path, age in ((old, 8), (recent, 6), (left_over, 8), (lock, 8)):
        path.write_text("{}")
        when = wall.now - age * 24 * 3600.0
        os.utime(path, (when, when))
    state_file(folder / "mine.json", wall).load()
    assert sorted(p.name for p in folder.iterdir()) == ["mine.json.lock", "old.json.lock", "recent.json"]


def test_an_unlearned_window_keeps_the_default_one(tmp_path):
    wall = Clock(1_000.0)
    state = state_file(tmp_path / "s.json", wall)
    state.merge(GateRecord(starts=(930.0, 945.0)))
    assert state.load().starts == (945.0,)


def test_the_file_keeps_at_most_the_newest_starts(tmp_path):
    wall = Clock(50_000.0)
    state = state_file(tmp_path / "s.json", wall)
    starts = tuple(49_950.0 + i * 0.001 for i in range(MAX_SHARED_STARTS + 10))
    assert state.merge(GateRecord(starts=starts)).starts == tuple(round(s, 6) for s in starts[10:])


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe garbage",
        b"[]",
        b'{"version": 99, "starts": []}',
        b'{"version": 1, "starts": "many"}',
        b'{"version": 1, "starts": [1.0, NaN]}',
        b'{"version": 1, "starts": [1.0], "budget": -4}',
        b'{"version": 1, "starts": [1.0], "budget": 2.5}',
    ],
)
def test_a_corrupt_file_is_ignored_with_a_debug_line_and_replaced(tmp_path, caplog, content):
    wall = Clock(100.0)
    path = tmp_path / "s.json"
    path.write_bytes(content)
    state = state_file(path, wall)
    with caplog.at_level(logging.DEBUG, logger="synclient.platform.gate_state"):
        assert state.load() == GateRecord()
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert state.merge(GateRecord(starts=(99.0,))) == GateRecord(starts=(99.0,))
    assert state.load().starts == (99.0,)


def test_an_unusable_folder_means_no_sharing_and_no_error(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    state = state_file(tmp_path / "file" / "gate" / "s.json", Clock(100.0))
    assert state.load() == GateRecord()
    assert state.merge(GateRecord(starts=(99.0,))) is None


def test_a_writer_waits_for_the_lock_and_never_writes_without_it(tmp_path):
    wall = Clock(100.0)
    path = tmp_path / "s.json"
    state_file(path, wall).merge(GateRecord(starts=(98.0,)))
    held = filelock.FileLock(str(path) + ".lock", thread_local=False)
    with held:  # another command is reading or writing the file
        impatient = state_file(path, wall, lock_timeout=0.0)
        assert impatient.merge(GateRecord(starts=(99.0,))) is None
        assert impatient.load() == GateRecord()
    assert state_file(path, wall).load().starts == (98.0,)


def test_writers_at_once_add_their_calls_in_turn(tmp_path):
    # eight commands, each adding its own calls twenty times over: without the lock, a read-merge-write of one
    # overwrites what another added between its read and its write
    wall = Clock(1_000.0)
    path = tmp_path / "s.json"
    writers, rounds = 8, 20
    barrier = threading.Barrier(writers)

    def writer(number):
        # (the lock is what this tests, not how long a command waits for it: on a loaded machine the last writer
        # waits for the others' 140 merges)
        state = state_file(path, wall, lock_timeout=600.0)
        barrier.wait()
        for i in range(rounds):
            state.merge(GateRecord(starts=(990.0 + number + i / 100,)))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(state_file(path, wall).load().starts) == writers * rounds


def test_the_file_is_named_by_a_digest_and_never_holds_the_token(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    state = GateStateFile.for_user(ENDPOINT, TOKEN, default_window=60.0, margin_share=0.01)
    assert state is not None and state.path.parent == tmp_path / "cache" / "gate"
    assert state.path.name == user_key(ENDPOINT + "/", TOKEN) + ".json"
    assert user_key(ENDPOINT, TOKEN) != user_key(ENDPOINT, "another-token") != user_key("http://other", TOKEN)
    state.merge(GateRecord(starts=(1.0,), budget=5))
    for path in (tmp_path / "cache").rglob("*"):
        assert TOKEN not in path.name and (path.is_dir() or TOKEN not in path.read_text())


def test_the_cache_folder_follows_the_platform_and_the_switch_turns_sharing_off(tmp_path, monkeypatch):
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr("sys.platform", "linux")
    assert cache_dir() == tmp_path / "xdg" / "synclient"
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.setenv(SWITCH_ENV, "0")
    assert GateStateFile.for_user(ENDPOINT, TOKEN, default_window=60.0, margin_share=0.01) is None
    assert shared_gate("http://127.0.0.1:9/switched-off", TOKEN, max_limit=4).state is None


# -- the gate with a state file ------------------------------------------------------------------------------------


class World:
    """One machine's time: each process reads it through its own monotonic clock (another origin) and all through
    the one wall clock."""

    def __init__(self, now: float) -> None:
        self.now = now

    def clock(self, origin: float = 0.0):
        return lambda: self.now + origin

    def pass_(self, seconds: float) -> None:
        self.now += seconds + 1e-6  # a hair past: a start_delay met exactly may round to a hair short


def gate_of(path, world, origin):
    wall = world.clock()
    return AdaptiveGate(max_limit=3, clock=world.clock(origin), wall_clock=wall, state=state_file(path, wall))


def run(gate, calls, world, step=0.01):
    for _ in range(calls):
        gate.release(gate.acquire())
        world.now += step


def first_command(path, world):
    """Ten calls admitted in a 10 s window that allows 10, the eleventh refused: the budget is learned (9)."""
    gate = gate_of(path, world, origin=-9_000.0)
    first = world.now
    run(gate, 10, world, step=0.1)
    gate.release(gate.acquire(), frequency())
    assert gate.policy.budget == with_reserve(10) == 9
    gate.share()  # as its Platform closes
    return first


def test_the_next_command_starts_its_window_with_the_previous_ones_calls(tmp_path):
    world = World(10_000.0)
    first = first_command(tmp_path / "s.json", world)
    world.now += 1.0
    second = gate_of(tmp_path / "s.json", world, origin=-9_876.0)  # another process: its own monotonic clock
    policy, now = second.policy, second._clock()
    assert (policy.budget, policy.budget_ceiling, policy.window_seconds) == (9, 9, 10.0)
    # the window holds the first command's ten calls: no start until the second-oldest leaves the window (10.1 s)
    delay = policy.start_delay(now)
    assert delay == pytest.approx(first + 0.1 + 10.1 - world.now)
    world.pass_(delay)
    assert policy.start_delay(second._clock()) == 0.0


def test_without_the_file_the_next_command_knows_nothing(tmp_path):
    world = World(10_000.0)
    first_command(tmp_path / "s.json", world)
    alone = AdaptiveGate(max_limit=3, clock=world.clock(-5.0), wall_clock=world.clock())
    assert alone.policy.budget is None and alone.policy.start_delay(world.now - 5.0) == 0.0


def test_a_refusal_the_shared_record_explains_is_not_blamed_on_another_client(tmp_path, caplog):
    # the second command's own calls plus the first's fill the window: paced by the record, it is not refused; a
    # refusal the record does not explain (a third client's calls) is still said
    world = World(10_000.0)
    first_command(tmp_path / "s.json", world)
    world.now += 0.5
    second = gate_of(tmp_path / "s.json", world, origin=3.0)
    waits = 0
    with caplog.at_level(logging.INFO, logger="synclient.platform.gate"):
        for _ in range(12):
            delay = second.policy.start_delay(second._clock())
            if delay:
                waits += 1
                world.pass_(delay)
            second.release(second.acquire())
        assert waits and not caplog.records
        world.pass_(second.policy.start_delay(second._clock()) or 0.0)
        second.release(second.acquire(), frequency())
    assert ["another client" in r.getMessage() for r in caplog.records] == [True]


def test_the_budget_a_command_learned_itself_is_not_overwritten_by_the_file(tmp_path):
    world = World(10_000.0)
    first_command(tmp_path / "s.json", world)
    gate = AdaptiveGate(max_limit=3, clock=world.clock(7.0), wall_clock=world.clock())
    gate.release(gate.acquire(), frequency(allowed=20, window=10.0))
    gate.state = state_file(tmp_path / "s.json", world.clock())
    gate.share()
    assert gate.policy.budget == with_reserve(20)
    assert gate.state.load().budget == with_reserve(20)  # the newest learning is the file's


def test_two_commands_at_once_count_each_others_calls_once(tmp_path):
    path = tmp_path / "s.json"
    world = World(20_000.0)
    a = gate_of(path, world, origin=0.0)
    b = gate_of(path, world, origin=-500.0)
    for _ in range(3):  # each shares after its calls; over three rounds the file offers known calls again
        run(a, 4, world)
        a.share()
        run(b, 2, world)
        b.share()
    a.share()
    assert len(state_file(path, world.clock()).load().starts) == 18
    assert len(a.policy._starts) == len(b.policy._starts) == 18


def test_the_gate_shares_periodically_as_calls_end(tmp_path):
    world = World(30_000.0)
    gate = gate_of(tmp_path / "s.json", world, origin=0.0)
    run(gate, 3, world, step=0.5)  # the first release shares at once, then every SHARE_EVERY_SECONDS at most
    assert len(gate.state.load().starts) == 1
    world.now += 5.0
    run(gate, 1, world)
    assert len(gate.state.load().starts) == 4


def test_shared_gate_reads_the_users_file_in_the_cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    endpoint = "http://127.0.0.1:7/shared-gate-test"
    gate = shared_gate(endpoint, TOKEN, max_limit=4)
    assert gate.state is not None and gate.state.path.parent == tmp_path / "cache" / "gate"
    gate.release(gate.acquire(), frequency(allowed=50, window=30.0))
    gate.share()
    del gate  # the last platform of this user closed: a later one makes a new gate, from the file
    again = shared_gate(endpoint, TOKEN, max_limit=4)
    assert (again.policy.budget_ceiling, again.policy.window_seconds) == (with_reserve(50), 30.0)


def test_closing_a_platform_shares_its_gate(tmp_path):
    world = World(40_000.0)
    gate = AdaptiveGate(max_limit=3, clock=world.clock(), wall_clock=world.clock())
    gate.release(gate.acquire())
    gate.state = state_file(tmp_path / "s.json", world.clock())  # after the call: only the close can share it
    Platform(endpoint="http://127.0.0.1:1", token=TOKEN, gate=gate).close()
    assert gate.state.load().starts == (40_000.0,)


# -- a hostile or odd file system ---------------------------------------------------------------------------------


def _learned_record(tmp_path) -> GateRecord:
    record = GateRecord(starts=(99.0,), window_seconds=60.0, budget=7)
    assert state_file(tmp_path / "elsewhere" / "s.json", Clock(100.0)).merge(record) == record
    return record


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="POSIX symbolic links")
def test_a_state_file_that_is_a_symbolic_link_is_not_read_through(tmp_path):
    _learned_record(tmp_path)
    (tmp_path / "gate").mkdir(mode=0o700)
    (tmp_path / "gate" / "s.json").symlink_to(tmp_path / "elsewhere" / "s.json")
    assert state_file(tmp_path / "gate" / "s.json", Clock(100.0)).load() == GateRecord()


def test_a_state_file_past_the_size_cap_is_not_read(tmp_path):
    from synclient.platform.gate_state import MAX_FILE_BYTES

    path = tmp_path / "gate" / "s.json"
    state = state_file(path, Clock(100.0))
    assert state.merge(GateRecord(starts=(99.0,), budget=7)) is not None
    assert state.load().budget == 7
    path.write_text(path.read_text() + " " * MAX_FILE_BYTES)  # still JSON, but no state file is this big
    assert state.load() == GateRecord()


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")
@pytest.mark.parametrize("planted", ["others may write", "a link"])
def test_a_folder_not_the_users_alone_is_not_used(tmp_path, planted):
    """An attacker who can write to the folder could put a link where the lock or temporary file goes."""
    record = _learned_record(tmp_path)
    folder = tmp_path / "gate"
    if planted == "a link":
        folder.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    else:
        folder.mkdir()
        folder.chmod(0o777)
        (folder / "s.json").write_text((tmp_path / "elsewhere" / "s.json").read_text())
    state = state_file(folder / "s.json", Clock(100.0))
    assert state.load() == GateRecord() and state.merge(record) is None
    assert sorted(path.name for path in folder.iterdir()) == ["s.json"] + (
        ["s.json.lock"] if planted == "a link" else []
    )


def test_a_hold_from_a_clock_that_was_ahead_is_cut_to_the_longest_retry_after(tmp_path):
    from synclient.platform.gate_state import MAX_HOLD_SECONDS

    wall = Clock(1_000.0)
    state = state_file(tmp_path / "gate" / "s.json", wall)
    assert state.merge(GateRecord(cool_until=1_000.0 + 30 * 24 * 3600.0)) is not None
    assert state.load().cool_until == 1_000.0 + MAX_HOLD_SECONDS
    gate = AdaptiveGate(state=state, clock=Clock(50.0), wall_clock=wall)
    delay = gate.policy.start_delay(50.0)
    assert delay is not None and 0 < delay <= MAX_HOLD_SECONDS


@pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt", reason="POSIX symbolic links")
def test_a_link_at_the_temporary_files_name_is_never_written_through(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's\n")
    path = tmp_path / "gate" / "s.json"
    path.parent.mkdir(mode=0o700)
    temp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    temp.symlink_to(outside)
    state = state_file(path, Clock(100.0))
    assert state.merge(GateRecord(starts=(99.0,))) is None  # (not written this time) ...
    assert outside.read_text() == "the user's\n" and not os.path.lexists(temp)
    assert state.merge(GateRecord(starts=(99.5,))) is not None  # ... the next time it is
    assert state.load().starts == (99.5,)
