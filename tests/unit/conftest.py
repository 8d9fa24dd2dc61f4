"""Fixtures of the unit tests."""
import pytest

from client_support import FAST, ROOT, TOKEN
from synclient.client import Platform


@pytest.fixture
def platform():
    """A Platform at a fake root (requests are answered by ``responses``), with fast retries."""
    with Platform(endpoint=ROOT, token=TOKEN, retry=FAST) as p:
        yield p
