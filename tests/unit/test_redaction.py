"""The one redactor (synclient.redaction): what it removes, what it leaves, and that every path to an output passes it
(loggers of the synclient, urllib3 and requests trees, SynclientError's str and repr, the URLs built into messages,
the endpoints, what a Dask shard sends back)."""

from __future__ import annotations

import logging
import pickle
import ssl
import string
from urllib.parse import quote

import pytest
import urllib3
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from synclient import redaction
from synclient.errors import CertificateError, ConfigError, TransferError, UrlRejectedError
from synclient.platform.credentials import Endpoints, clean_token, resolve_endpoints
from synclient.redaction import (
    LOGGER_TREES,
    REDACTED,
    install_redaction,
    redact,
    redact_data,
    redact_url,
    redaction_installed,
    register_secret,
    registered_secrets,
    url_host,
)


@pytest.fixture(autouse=True)
def _registry_restored():
    """The process's registry of secrets as it was before each test: a secret a test registers (the property
    tests register arbitrary texts, "failed" among them) must not redact another test's words."""
    saved = set(redaction._secrets)
    yield
    with redaction._secrets_lock:
        redaction._secrets.clear()
        redaction._secrets.update(saved)


JWT = (
    "eyJ0eXAiOiJKV1QiLCJraWQiOiJXN05OOldMSlQ6SjVSSzpMN1RMOlQ3TDc6M1ZYNjpKRU9VOjY0NFI6VTNJWDo1S1oyOjdaQ0s6RlBUSCIs"
    "ImFsZyI6IlJTMjU2In0.eyJhY2Nlc3MiOnsic2NvcGUiOlsidmlldyIsImRvd25sb2FkIl19LCJ0b2tlbl90eXBlIjoiUEVSU09OQUxfQUND"
    "RVNTX1RPS0VOIn0.Zm9vYmFyLXNpZ25hdHVyZS0wMTIzNDU2Nzg5X2FiY2RlZg"
)


@pytest.mark.parametrize(
    "text, shown",
    [
        (
            "the storage host alice:pw-SECRET@files.example.org:8443 is not trusted",
            "the storage host ***@files.example.org:8443 is not trusted",
        ),
        (
            "GET https://alice:pw-SECRET@h.org/ext/1/a.csv?sig=QSECRET: 403",
            "GET https://***@h.org/ext/1/a.csv?<redacted>: 403",
        ),
        ("https://alice:p@ss@host/x", "https://***@host/x"),  # an unescaped @ in the password
        ("https://alice:pw?x@host/p", "https://***@host/p"),  # an unescaped ? in the password
        ("https://alice:pw/x@host/", "https://***@host/"),  # an unescaped / in the password
        ("sftp://TOKENUSER@host/x", "sftp://***@host/x"),  # a user alone may be a token
        (
            'https://b.test:443 "GET /k.bin?X-Amz-Signature=abc HTTP/1.1" 206 10',
            'https://b.test:443 "GET /k.bin?<redacted> HTTP/1.1" 206 10',
        ),  # urllib3's request line
        (
            "Max retries exceeded with url: /repo/v1/x?token=abc (Caused by X)",
            "Max retries exceeded with url: /repo/v1/x?<redacted> (Caused by X)",
        ),
        ("(see https://h/p?a=1)", "(see https://h/p?<redacted>)"),
        (f"Authorization: Bearer {JWT}", f"Authorization: {REDACTED}"),
        (f"token {JWT[:60]}... cut short", f"token {REDACTED}... cut short"),
        ("header Authorization: Basic dXNlcjpwYXNz, next", f"header Authorization: {REDACTED}, next"),
        ("{'Authorization': 'Bearer abc.def'}", f"{{'Authorization': '{REDACTED}'}}"),
        ("sent bearer%20abc.def-ghi to the proxy", f"sent bearer {REDACTED} to the proxy"),
        ("password=hunter2&x=1", f"password={REDACTED}&x=1"),
        ("{'token': 'abc123'}", f"{{'token': '{REDACTED}'}}"),
    ],
)
def test_what_is_removed(text, shown):
    assert redact(text) == shown
    assert redact(shown) == shown  # idempotent


@pytest.mark.parametrize(
    "text",
    [
        "the access token from the --token option / token= argument has a space inside it",
        "put 'authtoken = <token>' under [default] in ~/.synapseConfig",
        "mail bob@example.org about https://host:443/data/a.csv",
        "/tmp/what?.txt and C:\\data\\x.bin",
        "http://[::1]:9/x",
        "syn123.4 downloaded, 0.0 MB in 0.1 s",
        "is it an http:// server?",
        "GET /entity/{id}/children: HTTP 404",
    ],
)
def test_what_stays(text):
    assert redact(text) == text


def test_a_registered_secret_is_redacted_in_every_form_and_a_short_one_is_ignored():
    secret = "tok-unit-Registered-0123456789"
    register_secret(secret + "\r\n")
    assert secret in registered_secrets()
    for form in (secret, repr(secret + "\r")[1:-1], quote(secret, safe="")):
        assert secret not in redact(f"x {form} y")
    register_secret("abc")
    assert redact("abc and abcd") == "abc and abcd"


def test_redact_takes_secrets_for_one_call_and_the_cli_alias_is_the_same_function():
    from synclient import cli

    assert cli.redact is redact and cli.REDACTED == REDACTED
    assert redact("x one-call-secret-1 y", secrets=["one-call-secret-1"]) == f"x {REDACTED} y"
    assert "one-call-secret-1" not in registered_secrets()


def test_a_token_is_registered_when_it_is_resolved():
    clean_token("  resolved-token-Unit-42 \n", where="a test")
    assert redact("sent resolved-token-Unit-42") == f"sent {REDACTED}"


def test_json_data_is_redacted_keys_included():
    document = {"error": {"message": "GET https://u:pw-1234567@h/x?s=1"}, "https://u:pw-7654321@h/": [JWT, 3, None]}
    clean = redact_data(document)
    assert "pw-1234567" not in str(clean) and "pw-7654321" not in str(clean) and JWT not in str(clean)
    assert clean["error"]["message"] == "GET https://***@h/x?<redacted>" and clean["https://***@h/"][1:] == [3, None]


def test_a_shown_url_keeps_host_port_and_path_only():
    assert redact_url("https://alice:pw@h.org:8/x/y?z#f") == "https://h.org:8/x/y?<redacted>"
    assert url_host("https://alice:pw@[::1]:8/x") == "[::1]:8"
    assert url_host("https://alice:pw@h.org:notaport/x") == "h.org"


# -- property tests ----------------------------------------------------------------------------------------------

#: RFC 3986 userinfo characters (unreserved and sub-delims); ":" and "%" come from the percent-encoding
_USERINFO = string.ascii_letters + string.digits + "-._~!$&'()*+,;="
_TEXT = st.text(alphabet=string.ascii_letters + string.digits + " -_./:'\"()[]{}<>@?=&,;", max_size=30)
_CONTEXTS = [
    "GET {url}: 403",
    "the storage host {netloc} is not trusted",
    "({url})",
    "'{url}'",
    "{{'url': '{url}'}}",
    "{url}",
    "failed: {url}\nnext line",
    "urlopen({url!r})",
    "url={url};",
]


@settings(max_examples=300, deadline=None)
@given(
    user=st.text(alphabet=_USERINFO, min_size=1, max_size=12),
    password=st.text(alphabet=_USERINFO + " @:/?#%é", min_size=8, max_size=24),
    host=st.sampled_from(["files.example.org", "127.0.0.1", "[::1]", "h"]),
    port=st.sampled_from(["", ":8443"]),
    path=st.sampled_from(["", "/", "/data/a.csv", "/@scope/x"]),
    query=st.sampled_from(["", "?X-Amz-Signature=QSECRET-0123", "?a=1&token=QSECRET-0123"]),
    context=st.sampled_from(_CONTEXTS),
    before=_TEXT,
    after=_TEXT,
)
def test_a_url_with_userinfo_never_keeps_its_password_nor_its_query(
    user, password, host, port, path, query, context, before, after
):
    encoded = quote(password, safe=_USERINFO)  # the password as it stands in a URL
    url = f"https://{user}:{encoded}@{host}{port}{path}{query}"
    netloc = f"{user}:{encoded}@{host}{port}"
    text = before + " " + context.format(url=url, netloc=netloc) + " " + after
    assume(encoded not in before + after and "QSECRET" not in before + after)
    shown = redact(text)
    assert encoded not in shown and "QSECRET" not in shown
    assert redact(shown) == shown
    assert encoded not in redact_url(url) and "QSECRET" not in redact_url(url)


@settings(max_examples=200, deadline=None)
@given(
    segments=st.lists(
        st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=16, max_size=60), min_size=3, max_size=3
    ),
    before=_TEXT,
    after=_TEXT,
)
def test_anything_shaped_like_a_personal_access_token_is_removed(segments, before, after):
    token = "eyJ" + ".".join(segments)
    assume(token not in before + after)
    assert token not in redact(f"{before} {token} {after}")
    assert token not in redact(f"{before}Bearer {token}{after}")


@settings(max_examples=200, deadline=None)
@given(
    secret=st.text(
        alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FF, blacklist_categories=("Cc", "Zs")),
        min_size=6,
        max_size=40,
    ),
    before=_TEXT,
    after=_TEXT,
)
def test_a_registered_secret_never_shows(secret, before, after):
    register_secret(secret)
    assume(secret not in before + after)
    assert secret not in redact(before + secret + after)


# -- where it is applied ---------------------------------------------------------------------------------------


def test_every_logger_of_the_trees_gets_the_filter_and_records_arrive_redacted(caplog):
    """Every module of the package imported (each makes its logger then), a Platform made: every logger of the
    synclient, urllib3 and requests trees filters its records."""
    import importlib
    import pkgutil

    import synclient
    from synclient.platform.rest import Platform

    for module in pkgutil.walk_packages(synclient.__path__, "synclient."):
        if not module.name.endswith("__main__"):
            try:
                importlib.import_module(module.name)
            except ConfigError:  # synclient.cluster without the dask extra (Python 3.9's test extra has none)
                assert module.name.startswith("synclient.cluster.")
    Platform("http://127.0.0.1:1", token="tok-logger-Test-0123456789").close()
    names = [name for name in logging.Logger.manager.loggerDict if name.split(".")[0] in LOGGER_TREES]
    assert "synclient.sync" in names and "urllib3.connectionpool" in names
    missing = [name for name in names if not redaction_installed(logging.getLogger(name))]
    assert not missing
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("synclient.sync").warning(
            "failed: %s (%s)", "https://a:pw-in-a-log@h/x?sig=1", "tok-logger-Test-0123456789"
        )
        try:
            raise TransferError("GET https://a:pw-in-a-trace@h/x?sig=2")
        except TransferError:
            logging.getLogger("synclient.transfer").exception("with its traceback")
    assert "pw-in-a-log" not in caplog.text and "sig=1" not in caplog.text and "tok-logger-Test" not in caplog.text
    assert "pw-in-a-trace" not in caplog.text and "sig=2" not in caplog.text
    assert "failed: https://***@h/x?<redacted> ([redacted])" in caplog.text


def test_install_redaction_reaches_loggers_created_since():
    late = logging.getLogger("synclient.created.late.for.a.test")
    assert not redaction_installed(late)
    install_redaction()
    assert redaction_installed(late)


def test_an_error_message_and_repr_are_redacted_and_it_pickles_whole():
    error = UrlRejectedError("GET https://alice:pw-in-an-error@h/x?X-Amz-Signature=s3cr3t: 403")
    for text in (str(error), repr(error), str(pickle.loads(pickle.dumps(error)))):
        assert "pw-in-an-error" not in text and "s3cr3t" not in text and "https://***@h/x?<redacted>" in text


def test_an_untrusted_certificate_names_the_host_without_its_password():
    """Defect 3 at the unit level: transfer/http.py's _get formatted the URL's netloc."""
    from synclient.platform.tls import TrustedCAs
    from synclient.transfer.http import DataClient, _get
    from synclient.transfer.urls import SignedUrl

    class Refusing(DataClient):
        def get(self, url, **_):
            cause = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
            cause.verify_message = "unable to get local issuer certificate"
            raise urllib3.exceptions.SSLError(cause)

    client = Refusing(4, trusted_cas=TrustedCAs(path=None, source="a test"))
    url = SignedUrl("https://alice:pw-SECRET-cert@files.example.org:8443/a.csv?sig=QSECRET-cert")
    with pytest.raises(CertificateError) as raised:
        _get(client, url, {}, where=redact_url(url.url), connect_timeout=1, stall_timeout=1)
    client.close()
    message = str(raised.value.args[0])
    assert "pw-SECRET-cert" not in message and "alice" not in message and "QSECRET" not in message
    assert message.startswith("the TLS certificate of the storage host files.example.org:8443 is not trusted")
    assert raised.value.host == "the storage host files.example.org:8443"


@pytest.mark.parametrize(
    "make",
    [
        lambda url: Endpoints.from_root(url),
        lambda url: resolve_endpoints(url),
        lambda url: resolve_endpoints(repo_endpoint=url + "/repo/v1"),
        lambda url: Endpoints(repo=url + "/repo/v1", file=url + "/file/v1", auth=url + "/auth/v1"),
    ],
)
def test_an_endpoint_with_a_password_is_refused_without_showing_it(make):
    """Defect 12: requests would send ``user:password`` as Basic auth in place of the token."""
    with pytest.raises(ConfigError) as raised:
        make("http://bob:EPSECRET-unit@127.0.0.1:9")
    assert "EPSECRET" not in str(raised.value.args[0]) and "has a user name or password in it" in str(raised.value)


def test_an_endpoints_repr_and_a_bad_endpoint_are_redacted():
    endpoints = Endpoints.from_root("http://127.0.0.1:9")
    assert repr(endpoints).startswith("Endpoints(repo='http://127.0.0.1:9/repo/v1'")
    with pytest.raises(ConfigError) as raised:
        Endpoints.from_root(f"ftp://host/{JWT}")
    assert JWT not in str(raised.value.args[0])


def test_what_a_shard_sends_back_is_redacted():
    pytest.importorskip("distributed")  # shard_run imports the budget, which needs it
    from synclient.cluster.shard_run import _portable

    error = CertificateError(
        "the TLS certificate of https://a:pw-in-a-shard@h/x?sig=QS-1 is not trusted", host="https://a:pw-in-a-shard@h/x"
    )
    travelled = pickle.loads(pickle.dumps(_portable(error)))
    assert type(travelled) is CertificateError
    assert "pw-in-a-shard" not in travelled.args[0] and "QS-1" not in travelled.args[0]
    assert "pw-in-a-shard" not in travelled.host
    assert _portable(TransferError("plain")).args == ("plain",)


def test_visible_spells_every_control_character_and_keeps_the_rest():
    assert (
        redaction.visible("evil\x1b[31m\r\n\t\x07\x00\x7f\x9b.txt") == "evil\\x1b[31m\\r\\n\\t\\x07\\x00\\x7f\\x9b.txt"
    )
    assert redaction.visible("café ² a：b ␛ 名前") == "café ² a：b ␛ 名前"  # printable Unicode stays as it is
    assert redaction.visible("line one\nline two\x1b", keep="\n") == "line one\nline two\\x1b"


@given(st.text())
def test_visible_leaves_no_control_character(text):
    shown = redaction.visible(text)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in shown)
    assert redaction.visible(shown) == shown  # idempotent: escapes are printable
