"""The local index reads rows on demand (nothing loaded at open), from any thread, and closes what it opened."""
import os
import threading

from synclient.sync.index import INDEX_FILE, META_DIR, IndexRow, LocalIndex


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
