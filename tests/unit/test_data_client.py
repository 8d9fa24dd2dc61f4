import http.server
import threading

import pytest
import urllib3

from synclient.errors import IntegrityError, TransferError
from synclient.transfer.http import ByteRange, DataClient, fetch_range, fetch_whole
from synclient.transfer.urls import SignedUrl


def test_environment_proxy_is_used_per_host_and_no_proxy_is_honoured(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("NO_PROXY", "direct.test")
    client = DataClient(8)
    assert isinstance(client._manager_for("https://bucket.test/k?X-Amz-Signature=s"), urllib3.ProxyManager)
    assert not isinstance(client._manager_for("https://direct.test/k"), urllib3.ProxyManager)
    assert not isinstance(client._manager_for("http://plain.test/k"), urllib3.ProxyManager)  # no HTTP_PROXY
    client.close()


def test_no_credentials_are_ever_configured(monkeypatch, tmp_path):
    (tmp_path / ".netrc").write_text("machine bucket.test login u password p\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    client = DataClient(4)
    assert "Authorization" not in client._headers
    assert set(client._headers) == {"User-Agent", "Accept-Encoding"}


# -- bodies that only their end delimits (external web servers without Content-Length) ---------------------------

BODY = b"0123456789" * 1000


class _CloseDelimited(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def do_GET(self):
        self.send_response(200)
        if self.path == "/announced-but-cut":
            self.send_header("Content-Length", str(len(BODY) + 5))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


@pytest.fixture
def close_delimited_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CloseDelimited)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _get(fetch, url, **kwargs):
    got = bytearray()
    client = DataClient(2)
    try:
        result = fetch(
            client,
            SignedUrl(url),
            sink=lambda offset, data: got.extend(data),
            chunk_size=4096,
            connect_timeout=5,
            stall_timeout=5,
            cancelled=lambda: False,
            **kwargs,
        )
    finally:
        client.close()
    return result, bytes(got)


def test_a_close_delimited_body_must_end_at_the_recorded_size(close_delimited_server):
    _, got = _get(fetch_range, close_delimited_server + "/x", byte_range=ByteRange(0, len(BODY), len(BODY)))
    assert got == BODY
    with pytest.raises(IntegrityError, match="goes on past byte 9990"):  # the size recorded is 10 short
        _get(fetch_range, close_delimited_server + "/x", byte_range=ByteRange(0, len(BODY) - 10, len(BODY) - 10))


def test_a_whole_body_of_unknown_size_is_read_to_its_end_or_to_its_announced_length(close_delimited_server):
    received, got = _get(fetch_whole, close_delimited_server + "/x")
    assert (received, got) == (len(BODY), BODY)
    with pytest.raises(TransferError, match=f"body ended at byte {len(BODY)}, expected {len(BODY) + 5}"):
        _get(fetch_whole, close_delimited_server + "/announced-but-cut")
