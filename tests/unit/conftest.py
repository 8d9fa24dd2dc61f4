"""Fixtures of the unit tests."""

import pytest
from client_support import FAST, ROOT, TOKEN

from synclient.platform.gate import AdaptiveGate
from synclient.platform.rest import Platform


@pytest.fixture
def platform():
    """A Platform at a fake root (requests are answered by ``responses``), with fast retries and a gate of its own
    (what one test teaches the process-wide gate of this user must not slow the next)."""
    with Platform(endpoint=ROOT, token=TOKEN, retry=FAST, gate=AdaptiveGate(max_limit=64)) as p:
        yield p
