"""``get --dask``: what is wrong with it is said in one line, with exit code 2, before any call to the platform (the
endpoint here is a closed port: a run that got as far as calling it would fail otherwise). A sync over a real
LocalCluster is in integration_tests/test_dask_sync.py."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cli_support import isolated_env

NO_DASK = (
    "import sys; sys.modules['distributed'] = None  # as where it is not installed\n"
    "from synclient.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _get(tmp_path, *args, program=None):
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT="http://127.0.0.1:9", SYNCLIENT_AUTH_TOKEN="t0ken")
    command = [sys.executable, "-c", program, *args] if program else [sys.executable, "-m", "synclient", *args]
    return subprocess.run(command, env=env, text=True, capture_output=True, timeout=60)


def test_without_dask_installed_the_run_says_how_to_get_it(tmp_path):
    done = _get(tmp_path, "get", "-r", "syn1", "--path", str(tmp_path / "t"), "--dask", "local:2", program=NO_DASK)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == "synclient: error: --dask needs Dask: pip install 'synclient[dask]'"


@pytest.mark.parametrize(
    "spec,words", [("local:0", "at least one worker process"), ("local", "local:N"), ("local:two", "local:N")]
)
def test_a_malformed_local_cluster_is_a_usage_error(tmp_path, spec, words):
    pytest.importorskip("distributed")
    done = _get(tmp_path, "get", "-r", "syn1", "--path", str(tmp_path / "t"), "--dask", spec)
    assert done.returncode == 2 and words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_file_that_is_no_scheduler_file_is_a_usage_error(tmp_path):
    pytest.importorskip("distributed")
    garbage = tmp_path / "scheduler.json"
    garbage.write_text("not a scheduler file")  # (Dask itself failed on it with an AssertionError)
    done = _get(tmp_path, "get", "-r", "syn1", "--path", str(tmp_path / "t"), "--dask", str(garbage))
    assert done.returncode == 2 and "not a Dask scheduler file" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_dry_run_needs_no_cluster(tmp_path):
    """--dry-run plans only: --dask is not even looked at (the run then fails on the closed endpoint, exit 2)."""
    done = _get(
        tmp_path, "get", "-r", "syn1", "--path", str(tmp_path / "t"), "--dask", "local:0", "--dry-run", program=NO_DASK
    )
    assert done.returncode == 2 and "Dask" not in done.stderr and "127.0.0.1:9" in done.stderr, done.stderr
