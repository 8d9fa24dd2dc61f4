"""FileResult's annotations and records: kept as the platform sent them, typed when read."""

from __future__ import annotations

import datetime
import json

import pytest

from synclient import Platform
from synclient.errors import ConfigError
from synclient.results import FileResult, SyncStatus, typed_annotations

WIRE = {
    "s": {"type": "STRING", "value": ["a", "b,c"]},
    "n": {"type": "LONG", "value": ["3", "-4"]},
    "x": {"type": "DOUBLE", "value": ["1.5"]},
    "ok": {"type": "BOOLEAN", "value": ["true", "False"]},
    "t": {"type": "TIMESTAMP_MS", "value": ["1704164645123"]},
    "empty": {"type": "STRING", "value": []},
}
TYPED = {
    "s": ["a", "b,c"],
    "n": [3, -4],
    "x": [1.5],
    "ok": [True, False],
    "t": [datetime.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=datetime.timezone.utc)],
    "empty": [],
}


def result(**kwargs) -> FileResult:
    return FileResult("syn1", 2, None, 3, "md5", SyncStatus.SKIPPED, **kwargs)


def test_annotations_are_typed_from_the_wire_and_from_the_index_json():
    assert typed_annotations(WIRE) == TYPED
    assert result(annotations=WIRE).annotations == TYPED
    assert result(annotations=json.dumps(WIRE)).annotations == TYPED  # the index keeps JSON text
    assert result().annotations == {} and result(annotations="{}").annotations == {}


def test_records_are_kept_only_when_given_and_stay_read_only():
    plain = result()
    assert plain.entity is None and plain.file_handle is None
    detailed = result(entity={"id": "syn1", "etag": "e"}, file_handle={"id": "7"})
    assert detailed.entity["etag"] == "e" and detailed.file_handle["id"] == "7"
    with pytest.raises(AttributeError):
        detailed.entity = {}
    assert "etag" not in repr(detailed) and "annotations" not in repr(detailed)  # a repr stays one short line


class _Credentials:
    def __init__(self, secret):
        self.secret = secret


class _FakeSynapse:
    repoEndpoint = "http://127.0.0.1:9/repo/v1"
    fileHandleEndpoint = "http://127.0.0.1:9/file/v1"
    authEndpoint = "http://127.0.0.1:9/auth/v1"

    def __init__(self, secret):
        self.credentials = _Credentials(secret) if secret is not None else None


def test_from_synapseclient_is_duck_typed_and_never_shows_the_token():
    with Platform.from_synapseclient(_FakeSynapse("tok-123\n")) as platform:
        assert platform.endpoints.file == _FakeSynapse.fileHandleEndpoint and platform.has_token
        assert "tok-123" not in repr(platform)
    for secret in (None, "", "  "):
        with pytest.raises(ConfigError, match="not logged in"):
            Platform.from_synapseclient(_FakeSynapse(secret))
    with pytest.raises(ConfigError, match="has a space, control or non-ASCII character") as caught:
        Platform.from_synapseclient(_FakeSynapse("tok 123"))
    assert "tok 123" not in str(caught.value)
