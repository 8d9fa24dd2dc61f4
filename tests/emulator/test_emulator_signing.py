from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import requests

from synclient.emulator.signing import UrlCheck, check_url, sign_url

SECRET = "s3cr3t"


def _split(url):
    parts = urlsplit(url)
    return parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}


def test_valid_until_expiry():
    now = 1_700_000_000.0
    path, query = _split(sign_url(SECRET, "http://h", "/bucket/k/abc", 30, now=now))
    assert query["X-Amz-Expires"] == "30" and query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert check_url(SECRET, path, query, now=now + 29) is UrlCheck.VALID
    assert check_url(SECRET, path, query, now=now + 31) is UrlCheck.EXPIRED


def test_tampering_is_detected():
    now = time.time()
    path, query = _split(sign_url(SECRET, "http://h", "/bucket/k/abc", 30, now=now))
    assert check_url(SECRET, path + "x", query, now=now) is UrlCheck.BAD_SIGNATURE
    assert check_url(SECRET, path, {**query, "X-Amz-Expires": "99999"}, now=now) is UrlCheck.BAD_SIGNATURE
    assert check_url("other", path, query, now=now) is UrlCheck.BAD_SIGNATURE
    del query["X-Amz-Signature"]
    assert check_url(SECRET, path, query, now=now) is UrlCheck.MALFORMED


def test_names_with_odd_characters_round_trip():
    path, query = _split(sign_url(SECRET, "http://h", "/bucket/a b/ü?#", 30))
    assert check_url(SECRET, path, query) is UrlCheck.VALID


def test_data_host_answers_403_xml_for_expired_and_tampered(seeded, api):
    emu, project = seeded
    emu.set_knobs(url_lifetime=30)
    url = api.url_for(emu.resolve(project, "d/a.txt"))
    assert requests.get(url).content == b"text"
    tampered = url.replace("X-Amz-Expires=30", "X-Amz-Expires=31")
    answer = requests.get(tampered)
    assert answer.status_code == 403 and b"<Code>SignatureDoesNotMatch</Code>" in answer.content
    assert answer.headers["Content-Type"] == "application/xml"
    # X-Amz-Date has whole seconds, so a 1 s URL is good for 0-1 s only: this one is used only once expired
    emu.set_knobs(url_lifetime=1)
    url = api.url_for(emu.resolve(project, "d/a.txt"))
    time.sleep(2.2)
    answer = requests.get(url)
    assert answer.status_code == 403 and b"Request has expired" in answer.content
    assert requests.get(url.split("?")[0]).status_code == 403


def test_data_host_ignores_and_counts_authorization(seeded, api):
    emu, project = seeded
    url = api.url_for(emu.resolve(project, "d/a.txt"))
    emu.reset_stats()
    assert requests.get(url, headers={"Authorization": "Bearer whatever"}).content == b"text"
    assert requests.get(url).status_code == 200
    stats = emu.stats()
    assert stats["data_requests"] == 2 and stats["auth_headers_on_data"] == 1
