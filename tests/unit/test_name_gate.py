"""The one name gate (synclient/sync/local/name_gate.py): remote paths of validated names, local paths claimed once per
run; and that nothing else in synclient.sync or synclient.cluster joins a remote name into a path."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import pytest

import synclient
from synclient.errors import PathConflictError, UnsafePathError
from synclient.sync.local.local_names import FilesystemNames
from synclient.sync.local.name_gate import NameGate, PathRegistry, RemotePath
from synclient.sync.local.paths import TargetDirectory

PACKAGE = Path(synclient.__file__).parent
GATE = "sync/local/name_gate.py"

#: identifiers that carry a remote name (or a path made of remote names) in the engine's code
REMOTE_MARKERS = {
    "name",
    "names",
    "given",
    "header",
    "headers",
    "entry",
    "named",
    "link",
    "rel",
    "rel_path",
    "rel_dir",
    "remote",
    "item",
    "part",
    "parts",
    "holder",
    "container",
}

#: (module, function) -> why the joins there are of local-only strings. Keep it small: a new entry needs a reason
#: that no name a server sent can reach the join except through the gate.
ALLOWED: Dict[Tuple[str, str], str] = {
    (
        "sync/local/paths.py",
        "*",
    ): "the target's primitives: child(), which the gate calls, validates the name itself; the others reach "
    "the index's local paths (made by the gate) one folder at a time",
    (
        "sync/local/folders.py",
        "*",
    ): "opens local folders one component at a time, no symlink followed, along local paths the gate made",
    ("sync/local/local_names.py", "*"): "the filesystem probe: its own constant names in its own scratch folder",
    (
        "sync/deletion.py",
        "*",
    ): "names listed from the local disk under folders the index holds: local names, no server's",
    ("sync/leftovers.py", "*"): "partial files listed from the local disk under folders the walk listed",
    ("sync/manifest_assembly.py", "*"): "the index's local paths (made by the gate) under the target's root",
    ("sync/records/index.py", "LocalIndex.local_names_in"): "a SQL prefix of an index path's text, no path",
    ("sync/plan/filters.py", "*"): "prefixes of a remote path's text for pattern matching; no path is made",
    ("cluster/shards.py", "split_balanced"): "arithmetic (a share of the weight), no path",
}


def _idents(node: ast.AST) -> Set[str]:
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return found


def _is_join(node: ast.AST) -> Optional[List[ast.AST]]:
    """The operands of a path-building expression (``a / b``, ``os.path.join``, ``joinpath``, ``"/".join``, an
    f-string with a ``/`` between values) or of a path's text split again (``.split("/")``), else None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return [node.left, node.right]
    if isinstance(node, ast.Call):
        func = ast.unparse(node.func)
        if func in ("os.path.join", "posixpath.join", "ntpath.join") or func.endswith(".joinpath"):
            return list(node.args)
        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr == "join"
            and isinstance(node.func.value, ast.Constant)
            and node.func.value.value in ("/", "\\")
        ):
            return list(node.args)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("split", "rsplit", "partition", "rpartition")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "/"
    ):
        return [node.func.value]  # a '/'-joined path of names split again into names
    if isinstance(node, ast.JoinedStr) and any(
        isinstance(v, ast.Constant) and "/" in str(v.value) for v in node.values
    ):
        return [v.value for v in node.values if isinstance(v, ast.FormattedValue)]
    return None


def _functions(tree: ast.Module) -> Iterator[Tuple[str, ast.AST]]:
    """Every function (``Class.method``) and the module's own statements (``<module>``)."""
    yield "<module>", tree
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item


def _tainted(function: ast.AST) -> Set[str]:
    """The function's own names that hold a remote name: the markers, and what is assigned from them."""
    tainted = set(REMOTE_MARKERS)
    assignments = [n for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.For))]
    changed = True
    while changed:
        changed = False
        for node in assignments:
            value = node.iter if isinstance(node, ast.For) else node.value
            targets = [node.target] if isinstance(node, (ast.For, ast.AnnAssign)) else node.targets
            for target, source in (pair for whole in targets for pair in _pairs(whole, value)):
                if source is None or not (_idents(source) & tainted):
                    continue
                for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                    if name not in tainted:
                        tainted.add(name)
                        changed = True
    return tainted


def _pairs(target: ast.AST, value: Optional[ast.AST]) -> List[Tuple[ast.AST, Optional[ast.AST]]]:
    """``a, b = x, y`` taints ``a`` from ``x`` only; any other assignment, each target from the whole value."""
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        return list(zip(target.elts, value.elts))
    return [(target, value)]


def remote_name_joins() -> List[str]:
    """Every join of a remote name into a path outside the gate and the allow-list, as ``module:line: source``."""
    found = []
    for path in sorted([*PACKAGE.glob("sync/*.py"), *PACKAGE.glob("cluster/*.py")]):
        module = path.relative_to(PACKAGE).as_posix()
        if module == GATE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        for qualname, function in _functions(tree):
            if (module, qualname) in ALLOWED or (module, "*") in ALLOWED:
                continue
            tainted = _tainted(function)
            nodes = (
                ast.walk(function)
                if qualname != "<module>"
                else (
                    n
                    for stmt in tree.body
                    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    for n in ast.walk(stmt)
                )
            )
            for node in nodes:
                operands = _is_join(node)
                if operands and any(_idents(op) & tainted for op in operands):
                    found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    return sorted(set(found))


def test_no_remote_name_is_joined_into_a_path_outside_the_gate():
    assert remote_name_joins() == []


def test_the_ast_check_finds_a_join_of_a_remote_name(tmp_path, monkeypatch):
    """The check itself: a join of a header's name, directly or through a variable, is found."""
    fake = tmp_path / "synclient"
    (fake / "sync").mkdir(parents=True)
    (fake / "sync" / "bad.py").write_text(
        "def place(folder, header):\n"
        "    leaf = header.name\n"
        "    return folder / leaf\n"
        "def label(folder, entity):\n"
        "    return f'{folder}/{entity.name}'\n"
        "def local(folder):\n"
        "    return folder / 'manifest.csv'\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert [line.split(":")[0:2] for line in remote_name_joins()] == [["sync/bad.py", "3"], ["sync/bad.py", "5"]]


def test_every_allowed_entry_still_exists():
    """An allow-list entry whose module or function is gone is removed, not kept as a hole."""
    for module, qualname in ALLOWED:
        tree = ast.parse((PACKAGE / module).read_text())
        assert qualname == "*" or qualname in dict(_functions(tree)), (module, qualname)


# -- RemotePath ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["sub/evil.txt", "..", ".", "", "a\x00b", "\udc80"])
def test_a_remote_path_refuses_a_name_that_is_no_component(name, tmp_path):
    with pytest.raises(UnsafePathError):
        RemotePath(("ok", name))
    with pytest.raises(UnsafePathError):
        RemotePath().child(name)
    for names in (FilesystemNames(), FilesystemNames(windows_rules=True)):  # refused before any mapping
        with pytest.raises(UnsafePathError):
            NameGate(TargetDirectory(tmp_path), names).path(tmp_path, name)


def test_what_only_the_local_filesystem_cannot_hold_is_checked_on_the_mapped_name(tmp_path):
    plain, windows = (
        NameGate(TargetDirectory(tmp_path)),
        NameGate(TargetDirectory(tmp_path), FilesystemNames(windows_rules=True)),
    )
    for name in ("back\\slash", "x" * 256):
        RemotePath((name,))  # a remote path may hold it
        with pytest.raises(UnsafePathError):
            plain.path(tmp_path, name)
    assert windows.path(tmp_path, "back\\slash") == tmp_path / "back\uff3cslash"


def test_a_remote_path_text_is_its_names_joined_once():
    path = RemotePath(("a", "b c")).child("d.txt")
    assert path.text == "a/b c/d.txt" and path.name == "d.txt" and path.parent == RemotePath(("a", "b c"))
    assert RemotePath().text == "" and RemotePath().spelled("x/y") == "x/y"


# -- the gate and its registry -------------------------------------------------------------------------------------


def test_two_entities_never_get_one_path_and_one_entity_may_ask_again(tmp_path):
    gate = NameGate(TargetDirectory(tmp_path))
    first = gate.file(tmp_path, "a.txt", "syn1")
    assert gate.file(tmp_path, "a.txt", "syn1") == first
    with pytest.raises(PathConflictError, match="syn1"):
        gate.file(tmp_path, "a.txt", "syn2")
    with pytest.raises(UnsafePathError):
        gate.file(tmp_path, "sub/a.txt", "syn3")
    assert gate.registry.owner_of(first) == "syn1"


def test_twins_as_the_filesystem_compares_names_are_one_path(tmp_path):
    names = FilesystemNames(case_insensitive=True)
    gate = NameGate(TargetDirectory(tmp_path), names)
    gate.file(tmp_path, "Case.txt", "syn1")
    with pytest.raises(PathConflictError):
        gate.file(tmp_path, "case.txt", "syn2")


def test_twins_the_disk_keeps_apart_are_two_paths(tmp_path):
    """A forced probe (or a target moved from another filesystem): the rules say one name, the disk holds two
    files; the disk is asked, and each file keeps its own path."""
    (tmp_path / "Case.txt").write_text("upper")
    (tmp_path / "case.txt").write_text("lower")
    registry = PathRegistry(FilesystemNames(case_insensitive=True))
    registry.claim(tmp_path / "Case.txt", "syn1")
    registry.claim(tmp_path / "case.txt", "syn2")
    assert registry.owner_of(tmp_path / "case.txt") == "syn2"
    with pytest.raises(PathConflictError):
        registry.claim(tmp_path / "case.txt", "syn3")


def test_a_list_file_is_placed_in_its_folders_with_windows_forms(tmp_path):
    gate = NameGate(TargetDirectory(tmp_path), FilesystemNames(windows_rules=True))
    placed = gate.place_file(RemotePath(("d:1", "a?.txt")), "syn5")
    assert placed.path == tmp_path / "d\uff1a1" / "a\uff1f.txt" and placed.renamed
    assert (tmp_path / "d\uff1a1").is_dir()
    assert gate.place_file(RemotePath(("plain.txt",)), "syn6").renamed == ""


def test_a_dry_run_gate_makes_no_folder(tmp_path):
    gate = NameGate(TargetDirectory(tmp_path / "t", create=False))
    placed = gate.place_file(RemotePath(("d", "a.txt")), "syn1")
    assert placed.path == tmp_path / "t" / "d" / "a.txt" and not (tmp_path / "t").exists()


@pytest.mark.parametrize("destination", ["relative/a.txt", "/t/../etc/a.txt", "/t/a\x00b"])
def test_a_fetch_job_takes_only_a_path_the_gate_could_give(destination):
    """What goes to a fetcher (a Dask worker's too) is a path the gate made: a worker makes no path of its own."""
    from synclient.platform.models import FileHandle
    from synclient.transfer.jobs import FetchJob

    with pytest.raises(UnsafePathError):
        FetchJob("syn1", 1, FileHandle("1", 1, "0" * 32), Path(destination))


def test_a_failed_entity_releases_its_path_and_only_its_own(tmp_path):
    registry = PathRegistry()
    registry.claim(tmp_path / "a.txt", "syn1")
    registry.release(tmp_path / "a.txt", "syn2")  # not syn2's: kept
    assert registry.owner_of(tmp_path / "a.txt") == "syn1"
    registry.release(tmp_path / "a.txt", "syn1")
    assert registry.owner_of(tmp_path / "a.txt") is None
    registry.claim(tmp_path / "a.txt", "syn3")
