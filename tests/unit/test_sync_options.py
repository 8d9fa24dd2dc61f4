"""SyncOptions: one validated, frozen, keyword-only object for what a sync does."""
from __future__ import annotations

import dataclasses

import pytest

from synclient import OnError, SyncOptions
from synclient.errors import ConfigError
from synclient.sync.records.manifest import ManifestMode
from synclient.sync.plan.planner import Collision


def test_strings_become_the_enums_and_patterns_tuples():
    options = SyncOptions(if_collision="keep.both", manifest="root", on_error="continue", include="*.csv",
                          exclude=["tmp/*", "*.bak"])
    assert options.if_collision is Collision.KEEP_BOTH and options.manifest is ManifestMode.ROOT
    assert options.on_error is OnError.CONTINUE
    assert options.include == ("*.csv",) and options.exclude == ("tmp/*", "*.bak")
    assert options.path_filter.wants_file("a/b.csv") and not options.path_filter.wants_file("tmp/x.csv")
    assert options == SyncOptions(if_collision=Collision.KEEP_BOTH, manifest=ManifestMode.ROOT,
                                  on_error=OnError.CONTINUE, include=["*.csv"], exclude=("tmp/*", "*.bak"))


@pytest.mark.parametrize("field, value, message", [
    ("if_collision", "keep.all", "if_collision must be one of overwrite.local, keep.local, keep.both"),
    ("manifest", "some", "manifest must be one of all, root, suppress"),
    ("on_error", "ignore", "on_error must be one of raise, continue"),
])
def test_a_bad_choice_is_one_line_naming_the_valid_ones(field, value, message):
    with pytest.raises(ConfigError, match=message) as caught:
        SyncOptions(**{field: value})
    assert "\n" not in str(caught.value)


def test_keyword_only_frozen_and_replace_validates():
    with pytest.raises(TypeError):
        SyncOptions(Collision.KEEP_BOTH)  # type: ignore[misc]
    options = SyncOptions(delete=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.delete = False  # type: ignore[misc]
    changed = options.replace(dry_run=True, if_collision="keep.local")
    assert changed.delete and changed.dry_run and changed.if_collision is Collision.KEEP_LOCAL
    assert not options.dry_run  # the original is untouched
    with pytest.raises(ConfigError):
        options.replace(manifest="nowhere")


def test_synapseclients_cache_is_shared_by_default_and_copied_not_linked():
    options = SyncOptions()
    assert options.synapse_cache is True and options.synapse_cache_link is False
    assert options.replace(synapse_cache=0).synapse_cache is False
    assert SyncOptions(synapse_cache_link=1).synapse_cache_link is True
