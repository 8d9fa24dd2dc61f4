"""The docs name only what exists: every repository path in docs/*.md and README.md, every backticked dotted
``synclient.…`` name, and, in docs/architecture.md (the map a newcomer follows), every backticked ``Class.member``
of a synclient class, ``module.name`` of a synclient module and ``name.py`` file.

A rename that leaves a doc behind fails here, naming the doc, its line and the stale name.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
import warnings
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import pytest

import synclient
from synclient._moved import MOVED

REPO_ROOT = Path(synclient.__file__).resolve().parent.parent
PACKAGE_DIR = REPO_ROOT / "synclient"
DOCS = sorted((REPO_ROOT / "docs").glob("*.md")) + [REPO_ROOT / "README.md"]
ARCHITECTURE = REPO_ROOT / "docs" / "architecture.md"
_CODE_FOLDERS = ("synclient", "tests", "integration_tests", "benchmarks")

#: a repository path: starts at a top-level folder, not inside a longer word or path (``.synclient/lock`` is a path
#: in a sync's target, not in the repository); stops before ``::`` (a test's name) and sentence punctuation
_REPO_PATH = re.compile(r"(?<![\w./~-])(?:synclient|tests|integration_tests|benchmarks|docs)/[\w./{},*-]*[\w/}]")
_LINK = re.compile(r"\]\((?!\w+://)([^)#\s]*)(?:#([^)\s]+))?\)")  # [text](page.md#anchor), not a web address
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_DOTTED = re.compile(r"synclient(?:\.\w+)+")
_MEMBER = re.compile(r"([A-Za-z_]\w*)\.([A-Za-z_]\w*)(?=\(|$)")
_FILE = re.compile(r"(?:[\w/]+/)?\w+\.py")
_CLASS_NAME = re.compile(r"[A-Z][a-z]+[A-Z]\w*")  # CamelCase of two words at least: FilePipeline, not DOWNLOAD


def lines_of(doc: Path) -> Iterator[Tuple[int, str]]:
    yield from enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1)


def missing_paths(doc: Path) -> List[str]:
    missing = []
    for number, line in lines_of(doc):
        for path in _REPO_PATH.findall(line):
            if not any(glob in path for glob in "*{") and not _exists(path):
                missing.append(f"{doc.name}:{number}: {path}")
    return missing


def _exists(path: str) -> bool:
    """``path`` exists, or names a module's attribute (``tests/emulator/emuhelpers.HOSTILE_SPEC``)."""
    return (REPO_ROOT / path).exists() or (REPO_ROOT / (path.rsplit(".", 1)[0] + ".py")).exists()


def anchors(doc: Path) -> Set[str]:
    """The anchors GitHub gives ``doc``'s headings: lower case, punctuation dropped, spaces as hyphens, a repeated
    heading numbered."""
    found: Set[str] = set()
    seen: Dict[str, int] = {}
    in_code = False
    for _, line in lines_of(doc):
        in_code ^= line.startswith("```")
        heading = re.match(r"#{1,6} (.*)", line)
        if heading and not in_code:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return found


def broken_links(doc: Path) -> List[str]:
    """Links to another file of the repository, or to a heading, that lead nowhere."""
    broken = []
    for number, line in lines_of(doc):
        for target, anchor in _LINK.findall(line):
            page = (doc.parent / target) if target else doc
            if not page.exists():
                broken.append(f"{doc.name}:{number}: {target}")
            elif anchor and page.suffix == ".md" and anchor not in anchors(page):
                broken.append(f"{doc.name}:{number}: {target}#{anchor}")
    return broken


def resolves(dotted: str) -> bool:
    """``dotted`` is a module (an old module path too: synclient._moved) or a module's attribute. A module that needs
    an optional dependency this Python lacks (the Dask driver) is read, not imported."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        source = _source_of(module)
        if source is None and module not in MOVED:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                found: object = importlib.import_module(module)
        except Exception:  # noqa: BLE001 - an optional dependency missing: what the source defines is enough
            return source is not None and (cut == len(parts) or parts[cut] in _top_level_names(source))
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def _source_of(module: str) -> Optional[Path]:
    base = REPO_ROOT.joinpath(*module.split("."))
    return next((path for path in (base.with_suffix(".py"), base / "__init__.py") if path.is_file()), None)


def _top_level_names(source: Path) -> Set[str]:
    return {name for node in ast.parse(source.read_text(encoding="utf-8")).body for name in _defined(node)}


def unresolved_names(doc: Path) -> List[str]:
    return [
        f"{doc.name}:{number}: {dotted}"
        for number, line in lines_of(doc)
        for quoted in _BACKTICKED.findall(line)
        for dotted in _DOTTED.findall(quoted)
        if quoted.startswith(dotted) and not resolves(dotted)
    ]


class PackageNames:
    """What the package defines, read from its source: each class's members (its bases' by name too), each
    module's top-level names (by the module's last name: ``pipeline``, ``walker``), every file's name."""

    def __init__(self, package_dir: Path) -> None:
        self.members: Dict[str, Set[str]] = {}
        self.bases: Dict[str, Set[str]] = {}
        self.module_names: Dict[str, Set[str]] = {}
        self.defined: Set[str] = set()  # every top-level name of every module
        self.files = {path.name for folder in _CODE_FOLDERS for path in (REPO_ROOT / folder).rglob("*.py")}
        self.paths = {path.relative_to(package_dir.parent).as_posix() for path in package_dir.rglob("*.py")}
        for path in sorted(package_dir.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            stem = path.parent.name if path.name == "__init__.py" else path.stem
            top = self.module_names.setdefault(stem, set())
            for node in tree.body:
                top.update(_defined(node))
            self.defined.update(top)
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    self.members.setdefault(node.name, set()).update(_class_members(node))
                    self.bases.setdefault(node.name, set()).update(
                        base.id if isinstance(base, ast.Name) else base.attr
                        for base in node.bases
                        if isinstance(base, (ast.Name, ast.Attribute))
                    )

    def has_member(self, cls: str, member: str, seen: Set[str] = frozenset()) -> bool:
        if member in self.members.get(cls, ()):
            return True
        return any(self.has_member(base, member, seen | {cls}) for base in self.bases.get(cls, ()) - seen)

    def stale(self, quoted: str) -> str:
        """Why ``quoted`` (a backticked text) names nothing the package has, or ""."""
        if _FILE.fullmatch(quoted):
            known = (
                quoted in self.paths
                if "/" in quoted and quoted.startswith("synclient/")
                else (quoted.rsplit("/", 1)[-1] in self.files or (REPO_ROOT / quoted).exists())
            )
            return "" if known else "no such file"
        if _CLASS_NAME.fullmatch(quoted):
            known = quoted in self.members or quoted in self.defined or hasattr(builtins, quoted)
            return "" if known or quoted in _OTHERS_CLASSES else "no such class"
        match = _MEMBER.match(quoted)
        if match is None or quoted in _PYTHONS_OWN or quoted.startswith("synclient."):  # (those: resolves())
            return ""
        owner, member = match.groups()
        if owner in self.members:
            return "" if self.has_member(owner, member) else f"{owner} has no {member}"
        if _CLASS_NAME.fullmatch(owner) and owner not in self.defined:
            return f"no class {owner}"
        if owner in self.module_names and owner not in _NOT_MODULES:
            return "" if member in self.module_names[owner] else f"module {owner} has no {member}"
        return ""


#: classes of others the docs name: Dask's, and the platform's wire type of a file outside its storage
_OTHERS_CLASSES = {"LocalCluster", "ExternalFileHandle"}
#: Python's own names that look like a synclient module's (synclient/transfer/http.py)
_PYTHONS_OWN = {"http.client"}
#: words that are synclient module names but, in the docs, mostly something else (``os.replace``, ``job.on_done``)
_NOT_MODULES = {"os", "job", "config", "process", "data", "sql"}


def _defined(node: ast.AST) -> Set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {target.id for target in node.targets if isinstance(target, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, (ast.If, ast.Try)):
        return {name for child in ast.iter_child_nodes(node) for name in _defined(child)}
    return set()


def _class_members(node: ast.ClassDef) -> Set[str]:
    members = {name for child in node.body for name in _defined(child)}
    for child in node.body:  # __slots__ = ("name", ...)
        if isinstance(child, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__slots__" for t in child.targets
        ):
            members.update(
                element.value
                for element in ast.walk(child.value)
                if isinstance(element, ast.Constant) and isinstance(element.value, str)
            )
    for child in ast.walk(node):  # attributes set in methods: self.name = ...
        targets = (
            child.targets
            if isinstance(child, ast.Assign)
            else [child.target]
            if isinstance(child, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        for target in targets:
            for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                if (
                    isinstance(element, ast.Attribute)
                    and isinstance(element.value, ast.Name)
                    and element.value.id == "self"
                ):
                    members.add(element.attr)
    return members


def stale_names(doc: Path, names: PackageNames) -> List[str]:
    return [
        f"{doc.name}:{number}: `{quoted}`: {why}"
        for number, line in lines_of(doc)
        for quoted in _BACKTICKED.findall(line)
        for why in [names.stale(quoted.strip())]
        if why
    ]


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_every_repository_path_in_the_docs_exists(doc):
    missing = missing_paths(doc)
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_every_link_to_a_page_or_heading_leads_somewhere(doc):
    broken = broken_links(doc)
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_every_dotted_synclient_name_in_the_docs_resolves(doc):
    unresolved = unresolved_names(doc)
    assert not unresolved, "\n".join(unresolved)


def test_the_architecture_names_only_classes_members_and_modules_that_exist():
    stale = stale_names(ARCHITECTURE, PackageNames(PACKAGE_DIR))
    assert not stale, "\n".join(stale)


def test_the_architecture_gives_each_error_its_nature():
    """The table of error natures says what each class's ``nature`` is, and names every class."""
    from synclient import errors

    named = {}
    for _, line in lines_of(ARCHITECTURE):
        row = re.match(r"\| `(RETRYABLE|PER_FILE|FATAL)` \|", line)
        if row:
            named.update(
                (name, errors.ErrorNature[row.group(1)])
                for name in re.findall(r"`(\w+)`", line.split("|")[3])
                if hasattr(errors, name)
            )
    listed = set(named)
    named.pop("LocalIOError", None)  # (listed in two rows: its nature follows its errno)
    wrong = {
        name: nature
        for name, nature in named.items()
        if getattr(errors, name).__new__(getattr(errors, name)).nature is not nature
    }
    assert not wrong, wrong
    # every class but the base and the two that only ever summarize others (a run's failures, a REST error)
    classes = {
        name for name, cls in vars(errors).items() if isinstance(cls, type) and issubclass(cls, errors.SynclientError)
    } - {"SynclientError", "SyncError", "PlatformError"}
    assert classes - listed == set()


def _module_named(name: str) -> str:
    """The module a layer table names: ``_version``, ``platform/``, ``sync/local/``, ``synclient/__init__.py``."""
    dotted = name.rstrip("/").replace("/", ".")
    dotted = dotted[: -len(".py")] if dotted.endswith(".py") else dotted
    dotted = dotted[: -len(".__init__")] if dotted.endswith(".__init__") else dotted
    return dotted if dotted.split(".")[0] == "synclient" else f"synclient.{dotted}"


def test_the_architecture_layer_table_is_the_layering_tests():
    """Each entry of tests/unit/test_layering.py's LAYERS is in one row of architecture.md's layer table, at its
    layer, and the table names nothing else."""
    from test_layering import LAYERS

    rows: Dict[str, Tuple[int, int]] = {}
    for _, line in lines_of(ARCHITECTURE):
        row = re.match(r"\| (\d+)(?:-(\d+))? \| (.*?) \|", line)
        if row:
            low, high = int(row.group(1)), int(row.group(2) or row.group(1))
            rows.update((_module_named(name), (low, high)) for name in re.findall(r"`([^`]+)`", row.group(3)))
    layers = dict(LAYERS)
    assert set(rows) == set(layers)
    misplaced = {name: layer for name, layer in layers.items() if not rows[name][0] <= layer <= rows[name][1]}
    assert not misplaced, misplaced


def test_the_checks_see_stale_names(tmp_path):
    """Each check fails on a doc that names what does not exist (they can fail)."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "See synclient/sync/walker.py and `synclient.sync.nowhere`, `synclient.errors.NoSuchError`.\n"
        "`FilePipeline.no_such_step` then `pipeline.no_such_function` in `gone.py`; the lock is\n"
        "`.synclient/lock`, `os.replace` is Python's, `synclient.sync.results` moved.\n"
        "`FilePipeline.files_found` and `TaskPool` exist; `NoSuchPipeline`, `NoSuchPool.run` do not.\n"
        "## A heading\n[here](#a-heading), [there](#nowhere), [a page](gone.md), [web](https://x.org/#y)\n"
    )
    names = PackageNames(PACKAGE_DIR)
    assert broken_links(doc) == ["doc.md:6: #nowhere", "doc.md:6: gone.md"]
    assert missing_paths(doc) == ["doc.md:1: synclient/sync/walker.py"]
    assert unresolved_names(doc) == ["doc.md:1: synclient.sync.nowhere", "doc.md:1: synclient.errors.NoSuchError"]
    assert stale_names(doc, names) == [
        "doc.md:2: `FilePipeline.no_such_step`: FilePipeline has no no_such_step",
        "doc.md:2: `pipeline.no_such_function`: module pipeline has no no_such_function",
        "doc.md:2: `gone.py`: no such file",
        "doc.md:4: `NoSuchPipeline`: no such class",
        "doc.md:4: `NoSuchPool.run`: no class NoSuchPool",
    ]
