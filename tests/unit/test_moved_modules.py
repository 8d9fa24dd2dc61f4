"""Module paths of earlier releases still import, as the very module they moved to, with a DeprecationWarning."""

import importlib
import importlib.util
import sys
from pathlib import Path

import pytest

import synclient
from synclient import _moved


@pytest.mark.parametrize("old, new", sorted(_moved.MOVED.items()))
def test_an_old_path_is_the_new_module_and_warns(old, new, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} is now {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__spec__.name == new  # the import of the old name did not rewrite the module's own spec


def test_from_import_of_an_old_path_gives_the_same_objects(monkeypatch):
    monkeypatch.delitem(sys.modules, "synclient.client", raising=False)
    with pytest.warns(DeprecationWarning) as caught:
        from synclient.client import Platform, RetryPolicy
    assert caught[0].filename == __file__  # the warning names the line of the import, not the import system's
    from synclient.platform.rest import Platform as NewPlatform
    from synclient.platform.rest import RetryPolicy as NewRetryPolicy

    assert (Platform, RetryPolicy) == (NewPlatform, NewRetryPolicy)


def test_every_new_path_exists_and_no_old_path_is_left_on_disk():
    root = Path(synclient.__file__).parent.parent
    for old, new in _moved.MOVED.items():
        assert importlib.util.find_spec(new) is not None, new
        old_file = root / old.replace(".", "/")
        # the finder would never be asked
        assert not old_file.with_suffix(".py").exists() and not old_file.is_dir(), old
