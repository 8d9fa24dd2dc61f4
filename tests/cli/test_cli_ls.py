"""``ls -l``: folders' totals from ``entity/children``'s ``includeSumFileSizes`` (one children call per folder, never
a call per file), files' sizes from one bundle call per file shown; counted with the emulator's request counter."""

from __future__ import annotations

from typing import Dict, List, Optional

import pytest
from cli_support import isolated_env, run_cli

from synclient.cli import TreeEntry, _fill_sizes, _walk_tree
from synclient.emulator import Emulator
from synclient.errors import MalformedAnswerError
from synclient.platform.models import ChildrenPage, EntityHeader, EntityType
from synclient.units import format_size

FOLDERS, FILES = 3, 50


def _content(folder: int, number: int) -> str:
    return f"{folder}:{number}\n" * (number + 1)


#: a project of 3 folders of 50 files (one holding a folder of 2 more) and one file beside them
SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                *(
                    {
                        "type": "folder",
                        "name": f"f{folder}",
                        "children": [
                            {"type": "file", "name": f"x{number:02}.txt", "content": _content(folder, number)}
                            for number in range(FILES)
                        ]
                        + (
                            [
                                {
                                    "type": "folder",
                                    "name": "deeper",
                                    "children": [
                                        {"type": "file", "name": "y.txt", "content": "y" * 1000},
                                        {"type": "file", "name": "z.txt", "content": "z" * 24},
                                    ],
                                }
                            ]
                            if folder == 0
                            else []
                        ),
                    }
                    for folder in range(FOLDERS)
                ),
                {"type": "file", "name": "top.txt", "content": "top\n"},
            ],
        }
    ]
}

DEEPER = 1000 + 24
FOLDER_BYTES = [
    sum(len(_content(folder, n)) for n in range(FILES)) + (DEEPER if folder == 0 else 0) for folder in range(FOLDERS)
]
TOTAL = sum(FOLDER_BYTES) + len("top\n")


@pytest.fixture(scope="module")
def emulator():
    with Emulator() as emu:
        emu.project = emu.seed_spec(SPEC)["p"]
        yield emu


@pytest.fixture
def env(tmp_path, emulator):
    return isolated_env(tmp_path, SYNCLIENT_ENDPOINT=emulator.endpoint, SYNCLIENT_AUTH_TOKEN=emulator.token)


def _ls(emulator, env, *args: str):
    emulator.reset_stats()
    result = run_cli(*args, env=env)
    assert result.returncode == 0, result.stderr
    routes: Dict[str, int] = emulator.stats()["api_by_route"]
    return result, routes


def _calls(routes: Dict[str, int], what: str) -> int:
    return sum(count for route, count in routes.items() if what in route)


def _sizes(stdout: str) -> Dict[str, str]:
    """name (with its folder's ``/``) -> the size column of ``ls -l``"""
    return {line[32:].strip(): line[20:30].strip() for line in stdout.splitlines()}


def test_ls_long_takes_one_children_call_per_folder_for_the_totals(emulator, env):
    result, routes = _ls(emulator, env, "ls", "-l", emulator.project)
    # the project's listing, then one per folder below it (4 folders), and f0's folders alone (51 children: more
    # than a page of 50): no call per file of theirs
    assert _calls(routes, "/entity/children") == 1 + (FOLDERS + 1) + 1, routes
    assert _calls(routes, "bundle2") == 1, routes  # top.txt, the one file shown
    assert sum(routes.values()) == 1 + 6 + 1, routes  # and the root's type
    sizes = _sizes(result.stdout)
    assert sizes["p/"] == format_size(TOTAL)
    assert [sizes[f"f{folder}/"] for folder in range(FOLDERS)] == [format_size(b) for b in FOLDER_BYTES]
    assert sizes["top.txt"] == "4 B"


def test_ls_recursive_long_sizes_files_one_call_each_and_folders_from_the_listing(emulator, env):
    result, routes = _ls(emulator, env, "ls", "-r", "-l", emulator.project)
    # the walk's own listings: a page per folder, two of f0 (51 children)
    assert _calls(routes, "/entity/children") == 1 + (FOLDERS + 1) + 1, routes
    assert _calls(routes, "bundle2") == FOLDERS * FILES + 2 + 1, routes  # one per file shown
    sizes = _sizes(result.stdout)
    assert sizes["p/"] == format_size(TOTAL)
    assert sizes["f0/"] == format_size(FOLDER_BYTES[0]) and sizes["deeper/"] == format_size(DEEPER)
    assert sizes["x49.txt"] == format_size(len(_content(2, 49)))


def test_ls_json_carries_the_totals_in_bytes(emulator, env):
    flat = run_cli("--json", "ls", "-l", emulator.project, env=env).json()
    tree = run_cli("--json", "ls", "-r", "-l", emulator.project, env=env).json()
    for document in (flat, tree):
        by_path = {entry["path"]: entry for entry in document["entries"]}
        assert by_path["p"]["size"] == TOTAL
        assert [by_path[f"f{folder}"]["size"] for folder in range(FOLDERS)] == FOLDER_BYTES
        assert by_path["top.txt"]["size"] == 4 and by_path["top.txt"]["version"] == 1
    assert {entry["path"]: entry["size"] for entry in tree["entries"]}["f0/deeper"] == DEEPER
    plain = run_cli("--json", "ls", emulator.project, env=env).json()
    assert all(entry["size"] is None for entry in plain["entries"])  # without -l, no size is asked


# -- what the listings say, in-process ----------------------------------------------------------------------------


def _header(entity_id: str, name: str, kind: EntityType) -> EntityHeader:
    return EntityHeader(id=entity_id, name=name, type=kind, version_number=1)


class ListingOnly:
    """A platform of folders only (their listings and sums), counting the pages asked; ``page`` children a page."""

    def __init__(self, children: Dict[str, List[EntityHeader]], sums: Dict[str, Optional[int]], page: int) -> None:
        self.children, self.sums, self.page = children, sums, page
        self.pages: List[tuple] = []

    def list_children(self, parent_id, *, include_types, page_token=None, sum_file_sizes=False) -> ChildrenPage:
        kinds = set(include_types)
        rows = [h for h in self.children.get(parent_id, []) if h.type in kinds]
        start = int(page_token or 0)
        self.pages.append((parent_id, tuple(sorted(k.name for k in kinds)), start))
        following = str(start + self.page) if start + self.page < len(rows) else None
        total = self.sums.get(parent_id) if sum_file_sizes and EntityType.FILE in kinds else None
        return ChildrenPage(rows[start : start + self.page], following, total)

    def iter_children(self, parent_id, *, include_types):
        token = None
        while True:
            page = self.list_children(parent_id, include_types=include_types, page_token=token)
            yield from page.headers
            token = page.next_page_token
            if token is None:
                return


def test_a_folder_of_more_than_a_page_lists_its_folders_alone():
    """``big`` holds 5 files and a folder (pages of 2): its first page says its sum, then its folders come alone
    (one page), not its files page after page."""
    files = [_header(f"syn{n}", f"{n}.txt", EntityType.FILE) for n in range(10, 15)]
    platform = ListingOnly(
        children={
            "syn1": [_header("syn2", "big", EntityType.FOLDER)],
            "syn2": [*files, _header("syn3", "sub", EntityType.FOLDER)],
            "syn3": [_header("syn20", "s.txt", EntityType.FILE)],
        },
        sums={"syn1": 0, "syn2": 500, "syn3": 7},
        page=2,
    )
    root = _header("syn1", "root", EntityType.PROJECT)
    entries = _walk_tree(platform, root, recursive=False, sized=True)  # type: ignore[arg-type]
    assert _fill_sizes(platform, entries) == []  # type: ignore[arg-type]
    assert [(e.path, e.size) for e in entries] == [("root", 507), ("big", 507)]
    asked_of_big = [(kinds, start) for parent, kinds, start in platform.pages if parent == "syn2"]
    assert asked_of_big == [(("FILE", "FOLDER"), 0), (("FOLDER",), 0)]


def test_a_sum_not_said_leaves_that_total_and_those_above_unknown():
    platform = ListingOnly(
        children={
            "syn1": [_header("syn2", "a", EntityType.FOLDER), _header("syn3", "b", EntityType.FOLDER)],
            "syn2": [_header("syn4", "inner", EntityType.FOLDER)],
        },
        sums={"syn1": 1, "syn2": 10, "syn3": 20, "syn4": None},
        page=50,
    )
    root = _header("syn1", "root", EntityType.PROJECT)
    for recursive in (False, True):
        entries: List[TreeEntry] = _walk_tree(platform, root, recursive=recursive, sized=True)  # type: ignore[arg-type]
        _fill_sizes(platform, entries)  # type: ignore[arg-type]
        sizes = {e.path: e.size for e in entries}
        assert sizes["root"] is None and sizes["a"] is None and sizes["b"] == 20, (recursive, sizes)


class Bounded(ListingOnly):
    """A listing that fails the test instead of being listed for ever."""

    def list_children(self, parent_id, **kwargs) -> ChildrenPage:
        assert len(self.pages) < 50, f"listed for ever: {self.pages[-5:]}"
        return super().list_children(parent_id, **kwargs)


def test_a_folder_listed_again_is_summed_once_and_never_for_ever():
    """``a`` lists itself (a server's loop) and ``sub``; ``big`` lists ``inner`` on two pages (a page shifted by a
    change made meanwhile: Synapse pages by offset): ``ls -l`` sums each folder once, and ends."""
    platform = Bounded(
        children={
            "syn1": [_header("syn2", "a", EntityType.FOLDER), _header("syn3", "big", EntityType.FOLDER)],
            "syn2": [_header("syn2", "a", EntityType.FOLDER), _header("syn4", "sub", EntityType.FOLDER)],
            "syn3": [
                _header("syn5", "inner", EntityType.FOLDER),
                *(_header(f"syn{n}", f"{n}.txt", EntityType.FILE) for n in range(10, 13)),
                _header("syn5", "inner", EntityType.FOLDER),
            ],
        },
        sums={"syn1": 1, "syn2": 10, "syn3": 20, "syn4": 5, "syn5": 7},
        page=2,
    )
    root = _header("syn1", "root", EntityType.PROJECT)
    entries = _walk_tree(platform, root, recursive=False, sized=True)  # type: ignore[arg-type]
    assert _fill_sizes(platform, entries) == []  # type: ignore[arg-type]
    assert {e.path: e.size for e in entries} == {"root": 1 + 15 + 27, "a": 10 + 5, "big": 20 + 7}


@pytest.mark.parametrize("loop", ["syn2", "syn1"])
def test_ls_r_of_a_folder_listed_inside_itself_is_one_malformed_answer(loop):
    """``ls -r``: a folder listed inside itself, or under a folder below it, ends the listing with one line, where
    it recursed until RecursionError."""
    platform = Bounded(
        children={
            "syn1": [_header("syn2", "a", EntityType.FOLDER), _header("syn3", "b", EntityType.FOLDER)],
            "syn2": [_header(loop, "again", EntityType.FOLDER)],
        },
        sums={},
        page=50,
    )
    root = _header("syn1", "root", EntityType.PROJECT)
    with pytest.raises(MalformedAnswerError, match=f"the children of syn2: .*folder {loop} is listed inside itself"):
        _walk_tree(platform, root, recursive=True, sized=True)  # type: ignore[arg-type]


@pytest.mark.parametrize("hostile", [-1, 2**70, "12 GB", 1.5, True, {"bytes": 1}])
@pytest.mark.parametrize("recursive", [False, True])
def test_a_hostile_sum_is_one_failure_line_and_that_total_unknown(hostile, recursive):
    """``sumFileSizesBytes`` negative, beyond a long, not a number: that folder's total (and those above) is ``-``
    and one line says why (exit 1, as for a file's malformed answer), where it was a silent ``-``."""
    import dataclasses

    class Hostile(ListingOnly):
        def list_children(self, parent_id, **kwargs) -> ChildrenPage:
            page = super().list_children(parent_id, **kwargs)
            if parent_id != "syn2" or page.sum_file_sizes is None:
                return page
            said = ChildrenPage.from_wire({"page": [], "sumFileSizesBytes": hostile})
            return dataclasses.replace(page, sum_file_sizes=said.sum_file_sizes, sum_problem=said.sum_problem)

    platform = Hostile(
        children={"syn1": [_header("syn2", "a", EntityType.FOLDER), _header("syn3", "b", EntityType.FOLDER)]},
        sums={"syn1": 1, "syn2": 10, "syn3": 20},
        page=50,
    )
    root = _header("syn1", "root", EntityType.PROJECT)
    entries = _walk_tree(platform, root, recursive=recursive, sized=True)  # type: ignore[arg-type]
    failures = _fill_sizes(platform, entries)  # type: ignore[arg-type]
    assert len(failures) == 1 and failures[0].startswith("failed: syn2: ") and "sumFileSizesBytes" in failures[0]
    assert "\n" not in failures[0]
    assert {e.path: e.size for e in entries} == {"root": None, "a": None, "b": 20}


@pytest.mark.parametrize("recursive", [False, True])
def test_an_entry_on_two_pages_of_a_listing_is_listed_and_counted_once(recursive):
    """Synapse pages children by offset: a child added meanwhile shifts ``inner`` onto the next page as well. It is
    one entry (one line, one bundle or one total), as ``ls -l`` sums it once below a folder not listed."""
    platform = ListingOnly(
        children={
            "syn1": [_header("syn3", "big", EntityType.FOLDER)],
            "syn3": [
                _header("syn5", "inner", EntityType.FOLDER),
                _header("syn10", "l", EntityType.LINK),
                _header("syn5", "inner", EntityType.FOLDER),
            ],
        },
        sums={"syn1": 0, "syn3": 20, "syn5": 7},
        page=2,
    )
    root = _header("syn1", "root", EntityType.PROJECT)
    big = _header("syn3", "big", EntityType.FOLDER)
    entries = _walk_tree(platform, big, recursive=recursive, sized=True)  # type: ignore[arg-type]
    assert [e.path for e in entries] == ["big", "inner", "l"]
    entries = _walk_tree(platform, root, recursive=True, sized=True)  # type: ignore[arg-type]
    _fill_sizes(platform, entries)  # type: ignore[arg-type]
    assert {e.path: e.size for e in entries if e.header.type.is_container} == {"root": 27, "big": 27, "big/inner": 7}
