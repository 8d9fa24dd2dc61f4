"""SyncOptions: one validated, frozen, keyword-only object for what a sync does."""

from __future__ import annotations

import dataclasses
import inspect
import sys

import pytest

from synclient import OnError, SyncOptions, download_many, download_query, sync_from_platform
from synclient.errors import ConfigError
from synclient.sync import runner
from synclient.sync.plan.planner import Collision
from synclient.sync.records.manifest import ManifestMode
from synclient.transfer.config import TransferConfig


def test_strings_become_the_enums_and_patterns_tuples():
    options = SyncOptions(
        if_collision="keep.both", manifest="root", on_error="continue", include="*.csv", exclude=["tmp/*", "*.bak"]
    )
    assert options.if_collision is Collision.KEEP_BOTH and options.manifest is ManifestMode.ROOT
    assert options.on_error is OnError.CONTINUE
    assert options.include == ("*.csv",) and options.exclude == ("tmp/*", "*.bak")
    assert options.path_filter.wants_file("a/b.csv") and not options.path_filter.wants_file("tmp/x.csv")
    assert options == SyncOptions(
        if_collision=Collision.KEEP_BOTH,
        manifest=ManifestMode.ROOT,
        on_error=OnError.CONTINUE,
        include=["*.csv"],
        exclude=("tmp/*", "*.bak"),
    )


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("if_collision", "keep.all", "if_collision must be one of overwrite.local, keep.local, keep.both"),
        ("manifest", "some", "manifest must be one of all, root, suppress"),
        ("on_error", "ignore", "on_error must be one of raise, continue"),
    ],
)
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


# -- the public functions' option keywords: validated once, against SyncOptions ----------------------------------

#: a value other than the default for every option keyword a public function may take
CHANGED = {
    "on_error": "continue",
    "if_collision": "keep.both",
    "delete": True,
    "manifest": "root",
    "include": ["*.csv"],
    "exclude": "tmp/*",
    "dry_run": True,
    "follow_links": True,
    "provenance": True,
    "progress": False,
    "entity_details": True,
    "synapse_cache": False,
    "synapse_cache_link": True,
    "filesystem_names": "case",
    "file_names": "handle",
}
PUBLIC = {
    "sync_from_platform": (sync_from_platform, "syn1"),
    "download_many": (download_many, ["syn1"]),
    "download_query": (download_query, "SELECT id FROM syn9"),
}


def test_overridden_puts_given_fields_on_the_base_and_ignores_the_rest():
    base = SyncOptions(delete=True, include="*.txt")
    options = SyncOptions.overridden(base, {"include": "*.csv", "dry_run": None, "path": "x", "entity": "syn1"})
    assert options == SyncOptions(delete=True, include="*.csv")  # None: not given; other names: no options
    assert SyncOptions.overridden(None, {}) == SyncOptions()
    assert SyncOptions.overridden(base, {"path": "."}) is base
    with pytest.raises(ConfigError, match="if_collision must be one of"):
        SyncOptions.overridden(base, {"if_collision": "keep.all"})


def test_run_settings_check_options_config_and_view_once():
    settings = runner.RunSettings.of(SyncOptions(delete=True), keywords={"dry_run": True}, max_workers=3, view="syn9")
    assert settings.options == SyncOptions(delete=True, dry_run=True)
    assert settings.config == TransferConfig(max_workers=3) and settings.view == "syn9" and settings.cluster is None
    with pytest.raises(ConfigError, match="name it without a version"):
        runner.RunSettings.of(None, view="syn9.2")


@pytest.fixture
def captured(monkeypatch):
    """What a public function hands to the run (its settings), instead of running."""
    seen = []

    def capture(resolve, path, *, platform, syn, settings):
        seen.append(settings)
        return "ran"

    monkeypatch.setattr(runner, "_resolve_and_run", capture)
    return seen


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_option_keyword_of_a_public_function_reaches_its_options(name, captured):
    function, source = PUBLIC[name]
    keywords = [k for k in inspect.signature(function).parameters if k in CHANGED]
    assert {"on_error", "if_collision", "include", "exclude", "dry_run", "synapse_cache"} <= set(keywords)
    for keyword in keywords:
        assert function(source, ".", **{keyword: CHANGED[keyword]}) == "ran"
        options = captured.pop().options
        assert options == SyncOptions().replace(**{keyword: CHANGED[keyword]}), keyword
    # and on top of options= (a keyword overrides its field; the others keep the object's)
    function(source, ".", options=SyncOptions(provenance=True, include="*.txt"), include="*.csv", max_workers=2)
    settings = captured.pop()
    assert settings.options == SyncOptions(provenance=True, include="*.csv")
    assert settings.config.max_workers == 2


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_a_bad_option_keyword_is_one_config_error_before_any_call(name, captured):
    function, source = PUBLIC[name]
    with pytest.raises(ConfigError, match="on_error must be one of raise, continue"):
        function(source, ".", on_error="ignore")
    with pytest.raises(TypeError):
        function(source, ".", no_such_option=True)
    assert captured == []


def test_public_option_keywords_are_the_fields_they_override():
    """Each public function passes its ``locals()``: an option keyword must be spelled as its SyncOptions field."""
    fields = {field.name for field in dataclasses.fields(SyncOptions)}
    others = {
        "entity",
        "ids",
        "sql",
        "path",
        "recursive",
        "platform",
        "options",
        "config",
        "max_workers",
        "observer",
        "syn",
        "view",
        "scratch_project",
        "dask",
    }
    for function, _ in PUBLIC.values():
        assert set(inspect.signature(function).parameters) - others <= fields, function.__name__


@pytest.mark.skipif(sys.version_info < (3, 11), reason="typing.get_overloads is Python 3.11's")
@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_dry_run_overloads_tell_a_type_checker_what_comes_back(name):
    from typing import get_overloads

    returns = [
        (str(o.__annotations__["dry_run"]), str(o.__annotations__.get("options")), o.__annotations__["return"])
        for o in get_overloads(PUBLIC[name][0])
    ]
    assert returns == [
        ("Literal[True]", "Optional[SyncOptions]", "SyncPlan"),
        ("Literal[False]", "Optional[SyncOptions]", "SyncResults"),
        ("None", "None", "SyncResults"),  # no dry_run, no options: a real run
        ("Optional[bool]", "Optional[SyncOptions]", "Union[SyncResults, SyncPlan]"),
    ]
