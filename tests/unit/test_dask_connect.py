"""The command line's ``--dask`` (synclient/cluster/connect.py): whatever is wrong with it is one line (a ConfigError:
exit code 2), never a traceback, and nothing is started for a spec that cannot work. Dask itself is faked here: no
cluster starts and no connection is tried."""

import json
from types import SimpleNamespace

import pytest

from synclient.cluster import connect
from synclient.errors import ConfigError


class Refused(Exception):
    """What a fake Dask raises: not one of the exception types a caller would expect."""


@pytest.fixture
def dask(monkeypatch):
    """A fake ``distributed``: records what was asked of it; ``fail`` makes its Client/LocalCluster raise."""
    fake = SimpleNamespace(asked=[], fail=None)

    def client(*args, **kwargs):
        fake.asked.append(("Client", args, kwargs))
        if fake.fail is not None:
            raise fake.fail
        return _Closing("client")

    def local_cluster(**kwargs):
        fake.asked.append(("LocalCluster", (), kwargs))
        if fake.fail is not None:
            raise fake.fail
        return _Closing("cluster")

    fake.Client, fake.LocalCluster = client, local_cluster
    monkeypatch.setattr(connect, "import_distributed", lambda: fake)
    return fake


class _Closing:
    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _open(spec: str):
    with connect.dask_client(spec) as client:
        return client


def _config_error(spec: str) -> str:
    with pytest.raises(ConfigError) as info:
        _open(spec)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"--dask {spec}:")
    return message


def test_more_local_workers_than_the_machine_takes_start_nothing(dask, monkeypatch):
    monkeypatch.setattr(connect.os, "cpu_count", lambda: 2)
    assert "at most 8 worker processes" in _config_error("local:9")
    assert "at most 8" in _config_error("local:99999999999999999999")
    assert dask.asked == []
    assert _open("local:8").name == "client"  # the most allowed
    assert dask.asked[0] == (
        "LocalCluster",
        (),
        dict(n_workers=8, threads_per_worker=1, processes=True, dashboard_address=":0", config=connect.WORKER_CONFIG),
    )


def test_local_workers_that_cannot_start_are_one_line(dask):
    dask.fail = RuntimeError("Nanny failed to start.\nRuntimeError: Nanny failed to start worker process")
    assert "cannot start 2 Dask worker processes: Nanny failed to start." in _config_error("local:2")


@pytest.mark.parametrize("content", ["not json", "{}", "[1, 2]", json.dumps({"address": ""})])
def test_a_scheduler_file_without_an_address_is_one_line(dask, tmp_path, content):
    scheduler_file = tmp_path / "scheduler.json"
    scheduler_file.write_text(content)
    assert "not a Dask scheduler file" in _config_error(str(scheduler_file))
    assert dask.asked == []


def test_a_scheduler_file_that_cannot_be_read_is_one_line(dask, tmp_path):
    assert "No such file" in _config_error(str(tmp_path / "gone.json"))
    assert "Is a directory" in _config_error(str(tmp_path))
    assert dask.asked == []


def test_the_address_in_a_scheduler_file_is_the_one_connected_to(dask, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "scheduler.json").write_text(json.dumps({"address": "tls://10.0.0.1:8786", "type": "Scheduler"}))
    assert _open("~/scheduler.json").name == "client"
    assert dask.asked == [("Client", (), dict(address="tls://10.0.0.1:8786", timeout=connect.CONNECT_TIMEOUT))]


def test_whatever_dask_raises_for_an_address_is_one_line(dask):
    dask.fail = Refused("assert ip is not None")  # (Dask asserts on some inputs)
    assert "cannot reach the Dask scheduler at tcp://h:1: assert ip is not None" in _config_error("tcp://h:1")
