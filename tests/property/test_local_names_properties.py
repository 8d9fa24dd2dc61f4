"""Properties of the local names of one remote folder (issue 18): whatever names a folder holds, every entry gets
its own local name the forced filesystem can hold, the same whatever the listing's order, and a twin added later
renames nothing already there. Then the same through the engine: a forced case- and Unicode-insensitive,
Windows-ruled target holds every file of a clashing folder, and a re-sync moves nothing."""

from __future__ import annotations

import random
import shutil
import tempfile
import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from synclient import Platform, SyncStatus, sync_from_platform
from synclient.emulator import Emulator
from synclient.sync.local.local_names import (
    WINDOWS_CHARACTERS,
    WINDOWS_RESERVED_STEMS,
    FilesystemNames,
    Listed,
    Normalization,
    local_names,
    windows_form,
)

# names built to clash: case, composed/decomposed accents, Windows' characters, trailing dots and spaces, devices
_PIECES = st.sampled_from(
    [
        "a",
        "A",
        "b",
        "B",
        "é",
        "e\u0301",
        "É",
        ":",
        "?",
        "*",
        ".",
        " ",
        "CON",
        "nul",
        "com1",
        ".txt",
        ".TXT",
        "ß",
        "ss",
        "\x01",
        "\uff1a",
    ]
)
_NAME = st.lists(_PIECES, min_size=1, max_size=4).map("".join).filter(lambda n: n not in (".", ".."))
_RULES = st.builds(
    FilesystemNames,
    case_insensitive=st.booleans(),
    normalizes_unicode=st.sampled_from([None, Normalization.NFC, Normalization.NFD]),
    windows_rules=st.booleans(),
)


@st.composite
def _listing(draw, *, names=_NAME):
    chosen = draw(st.lists(names, min_size=1, max_size=12, unique=True))
    ids = draw(st.lists(st.integers(1, 10**6), min_size=len(chosen), max_size=len(chosen), unique=True))
    folders = draw(st.lists(st.booleans(), min_size=len(chosen), max_size=len(chosen)))
    return [Listed(name, f"syn{i}", is_folder) for name, i, is_folder in zip(chosen, ids, folders)]


def _holdable(name: str, rules: FilesystemNames) -> bool:
    if not rules.windows_rules:
        return True
    stem = name.partition(".")[0].rstrip(" ").upper()
    return (
        not any(c in WINDOWS_CHARACTERS or ord(c) < 32 for c in name)
        and name[-1] not in ". "
        and stem not in WINDOWS_RESERVED_STEMS
        and windows_form(name) == name
    )


@given(_listing(), _RULES, st.randoms(use_true_random=False))
def test_every_entry_gets_its_own_holdable_name_whatever_the_order(listing, rules, rng):
    mapped = local_names(listing, rules)
    assert set(mapped) == {entry.name for entry in listing}
    keys = [rules.same_name_key(local.name) for local in mapped.values()]
    assert len(set(keys)) == len(keys), mapped  # no two entries are one file on this filesystem
    assert all(_holdable(local.name, rules) for local in mapped.values()), mapped
    shuffled = list(listing)
    rng.shuffle(shuffled)
    assert local_names(shuffled, rules) == mapped  # the listing's order changes nothing
    for entry in listing:  # a name that can be held and has no twin is kept
        twins = [
            e
            for e in listing
            if rules.same_name_key(rules.legal_form(e.name)) == rules.same_name_key(rules.legal_form(entry.name))
        ]
        if len(twins) == 1 and rules.legal_form(entry.name) == entry.name:
            assert mapped[entry.name].name == entry.name and mapped[entry.name].renaming is None


@given(_listing(), st.sampled_from(["case", "nfc", "case,nfd"]), _NAME)
def test_a_twin_added_later_renames_nothing_already_there(listing, spec, name):
    rules = FilesystemNames.parse(spec)
    if name in {entry.name for entry in listing}:
        return
    newest = max(int(entry.entity_id[3:]) for entry in listing) + 1
    before = local_names(listing, rules)
    after = local_names(listing + [Listed(name, f"syn{newest}")], rules)
    assert {n: after[n] for n in before} == before


_ROOT = Path(tempfile.mkdtemp(prefix="synclient-names-prop-"))
_ENGINE_NAMES = (
    st.lists(st.sampled_from(["a", "A", "é", "e\u0301", ":", ".", " ", "CON"]), min_size=1, max_size=3)
    .map("".join)
    .filter(lambda n: n not in (".", ".."))
)


@settings(max_examples=15)
@given(st.lists(_ENGINE_NAMES, min_size=1, max_size=8, unique=True), st.integers(0, 2**32))
def test_a_clashing_folder_syncs_whole_and_a_resync_is_a_no_op(names, seed):
    target = Path(tempfile.mkdtemp(dir=_ROOT))
    contents = {name: f"{seed}:{name!r}" for name in names}
    order = list(names)
    random.Random(seed).shuffle(order)  # the remote's creation order decides which twin is older
    spec = {
        "names": "unchecked",
        "projects": [
            {"name": "p", "children": [{"type": "file", "name": name, "content": contents[name]} for name in order]}
        ],
    }
    rules = FilesystemNames(case_insensitive=True, normalizes_unicode=Normalization.NFD, windows_rules=True)
    try:
        with Emulator() as emu:
            project = emu.seed_spec(spec)["p"]
            platform = Platform(endpoint=emu.endpoint, token=emu.token)
            first = sync_from_platform(
                project, target, platform=platform, filesystem_names=rules, progress=False, manifest="suppress"
            )
            assert len(first) == len(names) and {r.status for r in first} == {SyncStatus.DOWNLOADED}
            local = {p.name: p.read_text() for p in target.iterdir() if p.is_file()}
            keys = {unicodedata.normalize("NFC", name).casefold() for name in local}
            assert len(keys) == len(names) and sorted(local.values()) == sorted(contents.values())
            emu.reset_stats()
            again = sync_from_platform(
                project, target, platform=platform, filesystem_names=rules, progress=False, manifest="suppress"
            )
            assert {r.status for r in again} == {SyncStatus.SKIPPED}
            assert emu.stats()["data_requests"] == 0
            assert {r.entity_id: r.path for r in again} == {r.entity_id: r.path for r in first}
    finally:
        shutil.rmtree(target, ignore_errors=True)
