"""local_names.py: the filesystem probe, its forced answers, and the mapping of one folder's names (issue 18)."""

from __future__ import annotations

import os
import unicodedata

import pytest

from synclient.errors import ConfigError
from synclient.sync.local.local_names import (
    WINDOWS_MAX_PATH,
    FilesystemNames,
    Listed,
    Normalization,
    Renaming,
    local_names,
    windows_form,
)

CASE = FilesystemNames(case_insensitive=True)
WINDOWS = FilesystemNames(case_insensitive=True, windows_rules=True)


def _names(rules, *entries):
    return {name: local.name for name, local in local_names([Listed(*e) for e in entries], rules).items()}


def test_the_probe_of_a_linux_folder_finds_names_kept_as_they_are_and_leaves_nothing(tmp_path):
    (tmp_path / "mine.txt").write_text("x")
    found = FilesystemNames.probe(tmp_path)
    assert found == FilesystemNames(max_name_bytes=found.max_name_bytes) and not found.maps_names
    assert os.listdir(tmp_path) == ["mine.txt"]


def test_a_probe_that_cannot_write_assumes_this_system(tmp_path):
    assert FilesystemNames.probe(tmp_path / "missing") == FilesystemNames.of_this_system()


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("case", FilesystemNames(case_insensitive=True)),
        ("case,nfd", FilesystemNames(case_insensitive=True, normalizes_unicode=Normalization.NFD)),
        ("windows", FilesystemNames(windows_rules=True, max_path=WINDOWS_MAX_PATH)),
        (" Windows , max_path=400,case", FilesystemNames(case_insensitive=True, windows_rules=True, max_path=400)),
        ("max_name=143", FilesystemNames(max_name_bytes=143)),
        ("none", FilesystemNames()),
        ("", FilesystemNames()),
    ],
)
def test_forced_answers(spec, expected):
    assert FilesystemNames.parse(spec) == expected


@pytest.mark.parametrize("spec", ["cases", "max_path=0", "max_path=x", "nfc;case"])
def test_a_forced_answer_that_is_not_one_is_a_config_error(spec):
    with pytest.raises(ConfigError, match="SYNCLIENT_FS_PROBE"):
        FilesystemNames.parse(spec)


def test_forced_beats_the_environment_which_beats_the_probe(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNCLIENT_FS_PROBE", "nfc")
    assert FilesystemNames.for_target(tmp_path).normalizes_unicode is Normalization.NFC
    assert FilesystemNames.for_target(tmp_path, forced="case") == CASE
    assert FilesystemNames.for_target(tmp_path, forced=WINDOWS) is WINDOWS
    monkeypatch.delenv("SYNCLIENT_FS_PROBE")
    assert FilesystemNames.for_target(None) == FilesystemNames.of_this_system()


@pytest.mark.parametrize(
    "name, mapped",
    [
        ("a:b", "a：b"),
        ('<>:"|?*\\', "＜＞：＂｜？＊＼"),
        ("end.", "end．"),
        ("end ", "end␠"),
        ("x\x01y\x1f", "x␁y␟"),
        ("CON", "CON_"),
        ("con.txt", "con_.txt"),
        ("COM1.tar.gz", "COM1_.tar.gz"),
        ("LPT9", "LPT9_"),
        ("nul ", "nul␠"),
        ("nul .txt", "nul _.txt"),
        ("CONSOLE.txt", "CONSOLE.txt"),
        ("COM0", "COM0"),
        (".hidden", ".hidden"),
        ("plain.txt", "plain.txt"),
    ],
)
def test_windows_form(name, mapped):
    assert windows_form(name) == mapped


def test_case_twins_the_oldest_keeps_the_name_the_others_get_their_id():
    names = _names(
        CASE,
        ("b.txt", "syn10"),
        ("B.txt", "syn9"),
        ("B.TXT", "syn100"),
        ("Data", "syn11", True),
        ("DATA", "syn12", True),
    )
    assert names == {
        "B.txt": "B.txt",
        "b.txt": "b (syn10).txt",
        "B.TXT": "B (syn100).TXT",
        "Data": "Data",
        "DATA": "DATA (syn12)",
    }


def test_a_name_that_needs_no_mapping_wins_over_one_that_does():
    result = local_names([Listed("a:b", "syn1"), Listed("a：b", "syn2")], WINDOWS)
    assert result["a：b"].name == "a：b" and result["a：b"].renaming is None
    assert result["a:b"].name == "a：b (syn1)" and result["a:b"].renaming is Renaming.TAKEN
    assert result["a:b"].reason() == f"{Renaming.TAKEN.value}: a：b"


def test_unicode_twins_and_their_reason():
    nfc, nfd = unicodedata.normalize("NFC", "é.txt"), unicodedata.normalize("NFD", "é.txt")
    rules = FilesystemNames(normalizes_unicode=Normalization.NFD)
    result = local_names([Listed(nfd, "syn2"), Listed(nfc, "syn3")], rules)
    assert result[nfd].name == nfd and result[nfc].name == nfc[:-4] + " (syn3).txt"
    assert result[nfc].renaming is Renaming.UNICODE_TWIN


def test_an_id_suffix_that_is_itself_a_remote_name_is_not_taken_twice():
    names = _names(CASE, ("a.txt", "syn1"), ("A.txt", "syn2"), ("a (syn2).txt", "syn3"))
    assert names == {"a.txt": "a.txt", "a (syn2).txt": "a (syn2).txt", "A.txt": "A (syn2-2).txt"}


def test_reserved_names_are_never_given():
    result = local_names([Listed(".SyncLient", "syn4", True)], CASE, reserved=[".synclient"])
    assert result[".SyncLient"].name == ".SyncLient (syn4)" and result[".SyncLient"].renaming is Renaming.RESERVED


def test_without_rules_every_name_is_its_own():
    assert _names(FilesystemNames(), ("a:b", "syn1"), ("A:B", "syn2")) == {"a:b": "a:b", "A:B": "A:B"}


def test_a_local_name_an_entry_already_has_is_kept_and_newcomers_go_around_it():
    def names(current, *entries):
        mapped = local_names([Listed(*e) for e in entries], WINDOWS, current=current)
        return {name: local.name for name, local in mapped.items()}, mapped

    # the keeper gone, a twin keeps 'data (syn9)', saying why
    kept, mapped = names({"data": "data (syn9)"}, ("data", "syn9", True))
    assert kept == {"data": "data (syn9)"} and mapped["data"].renaming is Renaming.KEPT
    # a mapped name already there beats a literal lookalike added later (which needs no mapping)
    kept, mapped = names({"a:b": "a\uff1ab"}, ("a:b", "syn3"), ("a\uff1ab", "syn5"))
    assert kept == {"a:b": "a\uff1ab", "a\uff1ab": "a\uff1ab (syn5)"} and mapped["a\uff1ab"].twin_of == "a:b"
    # a name that is not one of the entry's forms (a keep.both copy's, another id's) is not kept
    assert names({"x.txt": "x(1).txt"}, ("x.txt", "syn4"))[0] == {"x.txt": "x.txt"}
    assert names({"data": "data (syn1)"}, ("data", "syn9", True))[0] == {"data": "data"}
    # two entries holding one name as the filesystem compares it: the older keeps it
    kept, _ = names({"A": "A", "a": "a"}, ("A", "syn2"), ("a", "syn1"))
    assert kept == {"a": "a", "A": "A (syn2)"}


def test_a_twin_differing_in_case_and_unicode_normalization_is_reported_as_such():
    rules = FilesystemNames(case_insensitive=True, normalizes_unicode=Normalization.NFD)
    upper, lower = unicodedata.normalize("NFD", "Caf\u00e9.txt"), unicodedata.normalize("NFC", "caf\u00e9.txt")
    mapped = local_names([Listed(upper, "syn1"), Listed(lower, "syn2")], rules)
    assert mapped[upper].renaming is None
    assert mapped[lower].renaming is Renaming.CASE_AND_UNICODE_TWIN and mapped[lower].twin_of == upper
    assert "case and Unicode" in mapped[lower].reason()
