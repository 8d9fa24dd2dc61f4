"""The suite's own layout: test modules are collected by their base name (the test folders are no packages), so two
modules of one name in different folders stop the whole run at collection ("import file mismatch")."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_no_two_test_modules_share_a_name():
    where = defaultdict(list)
    for folder in ("tests", "integration_tests"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            if path.name.startswith("test_") or path.name == "conftest.py":
                where[path.name].append(path.relative_to(REPO_ROOT).as_posix())
    clashes = {name: paths for name, paths in where.items() if len(paths) > 1 and name != "conftest.py"}
    assert not clashes, f"test modules of one name in several folders (rename one): {clashes}"
