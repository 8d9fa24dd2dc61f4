"""After a run that was not interrupted: the partial downloads that no later run will resume are removed."""

from __future__ import annotations

from pathlib import Path
from typing import AbstractSet, Dict, Mapping, Optional, Set, Tuple

from synclient.sync.deletion import is_under_any
from synclient.sync.plan.filters import PathFilter, SizeAgeFilter
from synclient.sync.records.index import LocalIndex
from synclient.transfer.partial import sweep_partials


def sweep_run_partials(
    *,
    index: LocalIndex,
    root_id: str,
    target_root: Path,
    listed: Mapping[str, Path],
    unvisited: AbstractSet[str],
    keep: Set[Tuple[str, str]],
    path_filter: PathFilter,
    size_age: SizeAgeFilter = SizeAgeFilter(),
) -> None:
    """A run that was not interrupted leaves no partial download in the folders it listed (``listed``: rel dir ->
    folder), except those of files that failed now (``keep``: the next run resumes them) and, with filters, of
    files the filters leave out (they may resume another day; so may a long name's, whose partial does not spell
    the name; with the size and age filters, every one: a partial's name does not tell its file's size or age).
    Folders the remote dropped (indexed, not listed, not under an ``unvisited`` folder) are swept too."""
    rel_of: Dict[Path, str] = {folder: rel_dir for rel_dir, folder in listed.items()}
    seen: Set[str] = set()
    for row in index.iter_rows(root_id):  # folders the remote dropped: no run resumes there either
        rel_dir = row.local_path.rpartition("/")[0]
        if rel_dir in seen:  # one decision per folder, not per row
            continue
        seen.add(rel_dir)
        folder = target_root / rel_dir
        if folder not in rel_of and not is_under_any(row.local_path, unvisited):  # (rel_dir too)
            rel_of[folder] = rel_dir

    def spare(folder: Path, name: Optional[str]) -> bool:
        if not path_filter.active and not size_age.active:
            return False
        if name is None or size_age.active:
            return True
        rel_dir = rel_of.get(folder, "")
        return not path_filter.wants_file(f"{rel_dir}/{name}" if rel_dir else name)

    sweep_partials(list(rel_of), keep=keep, spare=spare)
