"""The local index reads rows on demand (nothing loaded at open), from any thread, and closes what it opened."""

import os
import threading

from synclient.sync.records.index import INDEX_FILE, META_DIR, IndexRow, LocalIndex


def _row(rel_path: str, root_id: str = "syn1") -> IndexRow:
    return IndexRow(rel_path, rel_path, root_id, "syn9", 2, "77", "0" * 32, 10, "text/plain", "syn5", 10, 123)


def _get(index: LocalIndex, rel_path: str):
    return index.get_many([rel_path]).get(rel_path)


def _open_index_fds(root) -> int:
    wanted = os.path.realpath(root / META_DIR / INDEX_FILE)
    return sum(1 for fd in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{fd}") == wanted)


def test_rows_are_looked_up_on_demand_from_any_thread(tmp_path):
    with LocalIndex(tmp_path) as index:
        assert _get(index, "a/b.txt") is None
        index.record(_row("a/b.txt"))
        index.record(_row("c.txt", root_id="syn2"))
        index.flush()
        seen = {}
        threads = [threading.Thread(target=lambda n=n: seen.update({n: _get(index, "a/b.txt")})) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert set(seen.values()) == {_row("a/b.txt")}
        assert [row.rel_path for row in index.iter_rows("syn2")] == ["c.txt"]
    assert _open_index_fds(tmp_path) == 0  # the writer's and every thread's read connection are closed
    with LocalIndex(tmp_path) as again:  # a new run reads what the last one committed
        assert _get(again, "c.txt") == _row("c.txt", root_id="syn2")
        again.forget("c.txt")
    with LocalIndex(tmp_path, read_only=True) as dry:
        assert _get(dry, "c.txt") is None and _get(dry, "a/b.txt") == _row("a/b.txt")


def test_a_dry_run_without_an_index_reads_no_rows_and_creates_nothing(tmp_path):
    with LocalIndex(tmp_path, read_only=True) as index:
        assert _get(index, "a.txt") is None and list(index.iter_rows("syn1")) == []
    assert not (tmp_path / META_DIR).exists()


def test_an_index_without_the_files_table_reads_as_empty(tmp_path):
    import sqlite3

    (tmp_path / META_DIR).mkdir()
    sqlite3.connect(tmp_path / META_DIR / INDEX_FILE).execute("CREATE TABLE other (x)").connection.close()
    with LocalIndex(tmp_path, read_only=True) as index:
        assert _get(index, "a.txt") is None  # costs hashing, never a crash


def test_a_lookup_of_more_paths_than_one_query_takes_finds_every_row(tmp_path):
    paths = [f"folder/f{i}.txt" for i in range(1234)]
    with LocalIndex(tmp_path) as index:
        for path in paths:
            index.record(_row(path))
        index.flush()
        found = index.get_many(paths + ["folder/absent.txt"])
    assert sorted(found) == sorted(paths) and found["folder/f1233.txt"] == _row("folder/f1233.txt")


def test_both_scans_stream_one_roots_rows_while_lookups_go_on_and_close_what_they_opened(tmp_path):
    with LocalIndex(tmp_path) as index:
        for path in ["b/z.txt", "a.txt", "b/a.txt", "c.txt"]:
            index.record(_row(path), annotations={"name": path})
        index.record(_row("other.txt", root_id="syn2"))
        index.flush()
        rows, sorted_rows = index.iter_rows("syn1"), index.iter_sorted("syn1")
        first, (first_sorted, annotations) = next(rows), next(sorted_rows)
        assert _open_index_fds(tmp_path) >= 2 + 2  # writer, shared reader, one connection per scan in progress
        assert _get(index, "c.txt") == _row("c.txt")  # the shared reader answers while both scans are open
        assert sorted([first.rel_path] + [row.rel_path for row in rows]) == ["a.txt", "b/a.txt", "b/z.txt", "c.txt"]
        assert (first_sorted, annotations) == (_row("a.txt"), {"name": "a.txt"})
        assert [(row.local_path, notes) for row, notes in sorted_rows] == [
            ("b/a.txt", {"name": "b/a.txt"}),
            ("b/z.txt", {"name": "b/z.txt"}),
            ("c.txt", {"name": "c.txt"}),
        ]
        stopped = index.iter_sorted("syn1")
        next(stopped)
        stopped.close()  # a scan left early closes its connection too
        assert [row.rel_path for row, _ in index.iter_sorted("syn2")] == ["other.txt"]
    assert _open_index_fds(tmp_path) == 0 and stopped is not None  # the scans (still referenced) closed theirs


def test_both_scans_read_what_lookups_read_in_a_dry_run_and_nothing_without_an_index(tmp_path):
    with LocalIndex(tmp_path, read_only=True) as none:
        assert list(none.iter_rows("syn1")) == [] and list(none.iter_sorted("syn1")) == []
    with LocalIndex(tmp_path) as index:
        index.record(_row("a.txt"), annotations={"k": 1})
    with LocalIndex(tmp_path, read_only=True) as dry:
        assert [row for row in dry.iter_rows("syn1")] == [_row("a.txt")]
        assert list(dry.iter_sorted("syn1")) == [(_row("a.txt"), {"k": 1})]


def test_an_index_that_fails_midway_is_a_local_io_error_for_both_scans(tmp_path):
    import sqlite3

    import pytest

    from synclient.errors import LocalIOError

    with LocalIndex(tmp_path) as index:
        index.record(_row("a.txt"))
        index.flush()
        db = sqlite3.connect(tmp_path / META_DIR / INDEX_FILE)
        db.execute("DROP TABLE files")
        db.commit()
        db.close()
        for scan in (index.iter_rows, index.iter_sorted):
            with pytest.raises(LocalIOError, match="cannot read the index in"):
                list(scan("syn1"))
    assert _open_index_fds(tmp_path) == 0
