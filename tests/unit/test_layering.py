"""The import graph of the package: no cycle, and no module imports one of a higher layer.

Every import counts, wherever it is written (module level, inside a function, under ``TYPE_CHECKING``): a lazy or
type-only import is still a dependency a reader must follow. The layers, lowest first, are the map of
docs/architecture.md; a new module must be given its layer here.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

import synclient

PACKAGE_DIR = Path(synclient.__file__).parent

#: (package or module, layer); the longest matching entry wins. Packages are the layers of docs/architecture.md:
#: the foundation at the package root, then the control plane, the data plane, the sync engine's parts (the local
#: disk, the records, the plan, the sources) below its orchestration, and the front doors on top.
LAYERS: List[Tuple[str, int]] = [
    ("synclient._version", 0),
    ("synclient._moved", 0),  # old module paths: found by name at import time, imports nothing
    ("synclient.units", 0),  # the one size format (KiB, MiB, ...): imports nothing
    ("synclient.redaction", 0),  # the one redactor (URL credentials and queries, tokens): imports nothing
    ("synclient.html_view", 0),  # a notebook's table of results or a plan: imports the redactor and the units
    ("synclient.results", 0),  # outcome types: import the units and the notebook's table
    ("synclient.errors", 1),
    ("synclient.portable", 2),  # what this OS offers (fast paths or their fallbacks), chosen once
    ("synclient.choices", 2),
    ("synclient.events", 2),
    ("synclient.progress", 3),
    ("synclient.platform", 3),  # control plane: wire models, credentials, TLS, the gate, the REST client
    ("synclient.synapse_cache", 4),  # synapseclient's download cache: files only, beside the config it reads
    ("synclient.transfer", 5),  # data plane: the shared pool, URLs, download strategies, partial files
    ("synclient.sync.local", 6),  # the local disk, safely: names to paths, folders, deletion
    ("synclient.sync.records", 7),  # the index and the manifests
    ("synclient.sync.plan", 7),  # one action per file, the path each file claims, filters, the dry run
    ("synclient.sync.sources", 8),  # where files come from: the tree walk, ids, datasets, queries
    ("synclient.sync", 9),  # orchestration: options, the pipeline, outcomes, the runner
    ("synclient.sync.check", 9),  # a local copy against a dry run of the same sources: reads only
    ("synclient.cluster", 9),  # a run over Dask: shards, the shared REST budget, the worker's task, the driver
    ("synclient.emulator", 10),  # the platform stand-in: a program of its own
    ("synclient.cli", 11),
    ("synclient.demo", 11),
    ("synclient.synapseutils_compat", 11),  # the drop-in syncFromSynapse: synapseclient objects over the engine
    ("synclient.__main__", 11),
    ("synclient", 12),  # the package's front door re-exports from everywhere
]


def layer_of(module: str) -> int:
    best = max((prefix for prefix, _ in LAYERS if module == prefix or module.startswith(prefix + ".")), key=len)
    return dict(LAYERS)[best]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> Dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def imports_of(name: str, path: Path, modules: Dict[str, Path]) -> Set[str]:
    """The synclient modules ``name`` imports (``from pkg import submodule`` counts as the submodule)."""
    is_package = path.name == "__init__.py"
    found: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in modules else base)
    return {target for target in found if target in modules and target != name}


def import_graph() -> Dict[str, Set[str]]:
    modules = all_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def test_every_module_has_a_layer():
    for name in all_modules():
        layer_of(name)  # raises for a module outside every prefix


def test_no_module_imports_a_higher_layer():
    upward = sorted(
        f"{name} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})"
        for name, targets in import_graph().items()
        for target in targets
        if layer_of(target) > layer_of(name)
    )
    assert not upward, "\n".join(upward)


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    cycles: List[List[str]] = []
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_the_checker_sees_cycles_and_upward_edges(tmp_path, monkeypatch):
    """The checks above would fail on a graph that has the defects they look for (they can fail)."""
    package = tmp_path / "synclient"
    (package / "sync").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("from synclient.sync.results import FileResult\n")
    (package / "sync" / "__init__.py").write_text("")
    (package / "sync" / "results.py").write_text("from ..errors import SynclientError\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE_DIR", package)
    graph = import_graph()
    assert graph["synclient.errors"] == {"synclient.sync.results"}
    assert graph["synclient.sync.results"] == {"synclient.errors"}  # relative import resolved
    with pytest.raises(AssertionError, match="synclient.errors \\(layer 1\\) imports synclient.sync.results"):
        test_no_module_imports_a_higher_layer()
    with pytest.raises(AssertionError, match="synclient.errors -> synclient.sync.results -> synclient.errors"):
        test_the_import_graph_has_no_cycle()
