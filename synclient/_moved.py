"""Module paths of earlier releases, still importable: each is the module it moved to, with a DeprecationWarning.

One finder on ``sys.meta_path`` answers for every old path, so ``from synclient.client import Platform`` keeps
working and gives the very same objects (``isinstance`` and monkeypatching behave as for the new path).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Dict, Optional, Sequence

#: old module path -> where it lives now
MOVED: Dict[str, str] = {
    "synclient.client": "synclient.platform.rest",
    "synclient.gate": "synclient.platform.gate",
    "synclient.models": "synclient.platform.models",
    "synclient.config": "synclient.platform.credentials",
    "synclient.network": "synclient.platform.tls",
    "synclient.sync.results": "synclient.results",
    "synclient.sync.planner": "synclient.sync.plan.planner",
    "synclient.sync.filters": "synclient.sync.plan.filters",
    "synclient.sync.dry_run": "synclient.sync.plan.dry_run",
    "synclient.sync.handle_names": "synclient.sync.plan.handle_names",
    "synclient.sync.walker": "synclient.sync.sources.walker",
    "synclient.sync.id_lists": "synclient.sync.sources.id_lists",
    "synclient.sync.queries": "synclient.sync.sources.queries",
    "synclient.sync.paths": "synclient.sync.local.paths",
    "synclient.sync.name_gate": "synclient.sync.local.name_gate",
    "synclient.sync.local_names": "synclient.sync.local.local_names",
    "synclient.sync.folders": "synclient.sync.local.folders",
    "synclient.sync.index": "synclient.sync.records.index",
    "synclient.sync.manifest": "synclient.sync.records.manifest",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as the module it moved to (the module object itself, not a copy)."""

    def __init__(self) -> None:
        self._true_specs: Dict[str, Optional[importlib.machinery.ModuleSpec]] = {}

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        # stacklevel 2: warn skips the import system's own frames, so the warning names the line of the import (and
        # Python shows it by default where that line is in __main__)
        warnings.warn(f"{spec.name} is now {new}: import it from there", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        # the import system now sets the module's __spec__ to the old path's; exec_module puts the true one back
        self._true_specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._true_specs[module.__name__]


def install() -> None:
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModules())
