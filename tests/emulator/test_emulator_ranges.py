from __future__ import annotations

import hashlib
import http.client
from urllib.parse import urlsplit

import pytest
import requests

from synclient.emulator import seeded_bytes
from synclient.emulator.data import ByteRange, RangeNotSatisfiable, parse_range


@pytest.mark.parametrize(
    "header, expected",
    [
        (None, None),
        ("", None),
        ("bytes=0-9", ByteRange(0, 9)),
        ("bytes=5-", ByteRange(5, 99)),
        ("bytes=-10", ByteRange(90, 99)),
        ("bytes=-1000", ByteRange(0, 99)),
        ("bytes=90-1000", ByteRange(90, 99)),
        ("bytes=99-99", ByteRange(99, 99)),
        ("bytes=0-1,5-6", None),  # multi-range: whole object, as S3 does
        ("items=0-1", None),  # not bytes: ignored
        ("bytes=9-3", None),  # invalid: ignored
    ],
)
def test_parse_range(header, expected):
    assert parse_range(header, 100) == expected


@pytest.mark.parametrize(
    "header, size", [("bytes=100-", 100), ("bytes=200-300", 100), ("bytes=-0", 100), ("bytes=0-", 0)]
)
def test_unsatisfiable(header, size):
    with pytest.raises(RangeNotSatisfiable):
        parse_range(header, size)


def test_ranged_get_head_and_416(seeded, api):
    emu, project = seeded
    url = api.url_for(emu.resolve(project, "big.bin"))
    whole = seeded_bytes(3 * 1024 * 1024 + 5, 7)
    answer = requests.get(url, headers={"Range": "bytes=1000-1999"})
    assert answer.status_code == 206
    assert answer.headers["Content-Range"] == f"bytes 1000-1999/{len(whole)}"
    assert answer.content == whole[1000:2000]
    assert answer.headers["ETag"] == f'"{hashlib.md5(whole).hexdigest()}"'
    head = requests.head(url)
    assert head.status_code == 200 and int(head.headers["Content-Length"]) == len(whole) and head.content == b""
    answer = requests.get(url, headers={"Range": f"bytes={len(whole)}-"})
    assert answer.status_code == 416 and answer.headers["Content-Range"] == f"bytes */{len(whole)}"


def test_range_misbehaviour_knobs(seeded, api):
    emu, project = seeded
    url = api.url_for(emu.resolve(project, "big.bin"))
    whole = seeded_bytes(3 * 1024 * 1024 + 5, 7)
    emu.set_knobs(data_ignore_range=True)
    answer = requests.get(url, headers={"Range": "bytes=10-19"})
    assert answer.status_code == 200 and answer.content == whole
    emu.set_knobs(data_ignore_range=False, data_wrong_content_range=True)
    answer = requests.get(url, headers={"Range": "bytes=10-19"})
    assert answer.status_code == 206 and answer.headers["Content-Range"] != f"bytes 10-19/{len(whole)}"


def test_keep_alive_serves_many_requests_on_one_connection(seeded, api):
    emu, project = seeded
    url = urlsplit(api.url_for(emu.resolve(project, "big.bin")))
    whole = seeded_bytes(3 * 1024 * 1024 + 5, 7)
    data = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    for start in range(0, 50_000, 10_000):
        data.request("GET", f"{url.path}?{url.query}", headers={"Range": f"bytes={start}-{start + 9999}"})
        answer = data.getresponse()
        assert answer.status == 206 and answer.read() == whole[start : start + 10000]
    data.close()
    api_host = urlsplit(emu.endpoint)
    rest = http.client.HTTPConnection(api_host.hostname, api_host.port, timeout=10)
    for _ in range(5):
        rest.request("GET", "/repo/v1/userProfile", headers={"Authorization": f"Bearer {emu.token}"})
        answer = rest.getresponse()
        assert answer.status == 200 and answer.read()
    rest.close()
