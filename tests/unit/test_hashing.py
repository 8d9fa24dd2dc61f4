"""The MD5 readers of synclient/transfer/hashing.py that the other tests do not cover: a whole local file."""

import hashlib
import os

import pytest

from synclient.sync.plan import planner
from synclient.transfer import hashing


@pytest.mark.parametrize("size", [0, 1, 6, 7, 8, 20, 21])
def test_file_md5_reads_the_whole_file_in_blocks(tmp_path, monkeypatch, size):
    monkeypatch.setattr(hashing, "HASH_READ", 7)  # blocks of 7: the sizes cover short, exact and ragged tails
    data = os.urandom(size)
    path = tmp_path / "f"
    path.write_bytes(data)
    assert hashing.file_md5(path) == hashlib.md5(data).hexdigest()
    assert hashing.file_md5(str(path)) == hashlib.md5(data).hexdigest()


def test_the_planner_hashes_local_files_with_the_same_reader():
    assert planner.file_md5 is hashing.file_md5
    assert hashing.EMPTY_MD5 == hashlib.md5(b"").hexdigest()


def test_file_md5_of_a_missing_file_raises_the_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        hashing.file_md5(tmp_path / "absent")
