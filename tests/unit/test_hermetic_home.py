"""The suite never reaches the machine's own ~/.synapseConfig or ~/.synapseCache (the root conftest.py sees to it):
a sync finds synapseclient's cache there and would read and write it, and synapseclient's ``Synapse()`` makes it."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from synclient.platform.credentials import config_path
from synclient.synapse_cache import SynapseCache, cache_root

REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)
REAL_CONFIG, REAL_CACHE = REAL_HOME / ".synapseConfig", REAL_HOME / ".synapseCache"


def test_home_config_and_cache_are_the_tests_own():
    home = Path(os.environ["HOME"])
    assert home != REAL_HOME and home.is_dir() and not os.listdir(home)  # fresh for each test
    assert config_path() == home / ".synapseConfig"
    assert cache_root() == home / ".synapseCache"
    assert SynapseCache.if_present() is None  # no test finds a cache it did not make


def test_synapseclient_defaults_are_the_tests_own_too():
    client = pytest.importorskip("synapseclient.client")
    cache = pytest.importorskip("synapseclient.core.cache")
    assert Path(client.CONFIG_FILE) != REAL_CONFIG  # read when synapseclient was first imported, in this session
    assert Path(os.path.expanduser(cache.CACHE_ROOT_DIR)) != REAL_CACHE
