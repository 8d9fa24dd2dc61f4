import urllib3

from synclient.transfer.http import DataClient


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
