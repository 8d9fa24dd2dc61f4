"""Signed URLs' queries never reach urllib3's logs: the one redaction filter (synclient.redaction) is installed
explicitly (when a Platform or a DataClient is created, or the CLI starts), once however often it is asked for, and
never as a side effect of an import."""

import logging
import subprocess
import sys
from pathlib import Path

import pytest

import synclient
from synclient.redaction import RedactingFilter, install_redaction
from synclient.transfer.http import DataClient

URLLIB3_REQUEST_LOGGER = "urllib3.connectionpool"
SIGNED = "/bucket/key.bin?X-Amz-Date=20260101T000000Z&X-Amz-Expires=30&X-Amz-Signature=0123456789abcdef"


def _redactions():
    return [f for f in logging.getLogger(URLLIB3_REQUEST_LOGGER).filters if isinstance(f, RedactingFilter)]


@pytest.fixture
def bare_logger():
    """urllib3's request logger without its filters for the test, as they were afterwards."""
    logger = logging.getLogger(URLLIB3_REQUEST_LOGGER)
    saved = list(logger.filters)
    logger.filters[:] = []
    yield logger
    logger.filters[:] = saved


def test_importing_the_package_installs_no_filter():
    code = (
        "import logging, synclient, synclient.transfer.urls, synclient.transfer.http, "
        "synclient.transfer.download, synclient.sync.runner, synclient.redaction\n"
        "print(sum(len(logging.getLogger(name).filters) for name in list(logging.Logger.manager.loggerDict)))"
    )
    root = Path(synclient.__file__).resolve().parents[1]  # this checkout's package, whatever is installed
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0"


def test_installing_is_idempotent(bare_logger):
    install_redaction()
    install_redaction()
    assert len(_redactions()) == 1 and len(bare_logger.filters) == 1


def test_a_data_client_installs_the_filter_and_urllib3_lines_lose_their_query(bare_logger, caplog):
    """The data client is the one that requests signed URLs (a sync's, or an SDK user's without a broker)."""
    DataClient(4).close()
    DataClient(4).close()
    assert len(_redactions()) == 1
    with caplog.at_level(logging.DEBUG, logger=URLLIB3_REQUEST_LOGGER):
        # the shape of urllib3's own request line
        bare_logger.debug(
            '%s://%s:%s "%s %s %s" %s %s', "https", "bucket.test", 443, "GET", SIGNED, "HTTP/1.1", 206, 10
        )
    [line] = [r.getMessage() for r in caplog.records if r.name == URLLIB3_REQUEST_LOGGER]
    assert line == 'https://bucket.test:443 "GET /bucket/key.bin?<redacted> HTTP/1.1" 206 10'


@pytest.mark.parametrize(
    "url, shown",
    [
        ("https://bucket.test/k.bin?X-Amz-Signature=s", "https://bucket.test/k.bin?<redacted>"),
        (
            "http://alice:hunter2@files.example.org:8080/data/a.csv?token=t",
            "http://files.example.org:8080/data/a.csv?<redacted>",
        ),
        ("sftp://bob@sftp.example.org/data/far.csv", "sftp://sftp.example.org/data/far.csv"),
        ("http://u:p@[::1]:9/x", "http://[::1]:9/x"),
    ],
)
def test_a_shown_url_has_no_query_user_or_password(url, shown):
    from synclient.transfer.urls import SignedUrl, redact_url

    assert redact_url(url) == shown
    assert "hunter2" not in repr(SignedUrl(url)) and "alice" not in repr(SignedUrl(url))
