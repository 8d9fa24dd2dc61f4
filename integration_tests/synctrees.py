"""Seed specs with known expected bytes, and a byte-for-byte checker of a synced folder."""

from __future__ import annotations

import hashlib
import math
import os
import random
from pathlib import Path
from typing import Dict, List, Tuple

MiB = 1024 * 1024


def seeded_md5(size: int, seed: int) -> str:
    """MD5 of the emulator's seeded content: ``random.Random(seed).randbytes(size)``.

    Drawn in 1 MiB steps (randbytes draws 32-bit words, so steps of a multiple of 4 give the same bytes as one
    call); one call cannot produce more than 256 MiB."""
    generator, md5, remaining = random.Random(seed), hashlib.md5(), size
    while remaining:
        step = min(MiB, remaining)
        md5.update(generator.randbytes(step))
        remaining -= step
    return md5.hexdigest()


class Tree:
    """A spec under construction plus what each file must contain (relative path -> MD5)."""

    def __init__(self, name: str = "p") -> None:
        self.name = name
        self.children: List[dict] = []
        self.expected: Dict[str, str] = {}
        self.containers: List[int] = []  # child count per container, for the listing-page bound
        self._seed = 1000

    def text_file(self, parent: List[dict], prefix: str, name: str, content: str) -> None:
        parent.append({"type": "file", "name": name, "content": content})
        self.expected[prefix + name] = hashlib.md5(content.encode()).hexdigest()

    def seeded_file(self, parent: List[dict], prefix: str, name: str, size: int) -> None:
        self._seed += 1
        parent.append({"type": "file", "name": name, "size": size, "seed": self._seed})
        self.expected[prefix + name] = seeded_md5(size, self._seed)

    def folder(self, parent: List[dict], name: str) -> List[dict]:
        children: List[dict] = []
        parent.append({"type": "folder", "name": name, "children": children})
        return children

    def spec(self) -> dict:
        return {"projects": [{"name": self.name, "children": self.children}]}

    @property
    def file_count(self) -> int:
        return len(self.expected)

    def listing_pages(self) -> int:
        """Children pages a full walk needs (50 per page, one page for an empty container)."""
        return sum(max(1, math.ceil(n / 50)) for n in self._child_counts(self.children))

    def _child_counts(self, children: List[dict]) -> List[int]:
        counts = [len(children)]
        for child in children:
            if child["type"] == "folder":
                counts += self._child_counts(child["children"])
        return counts


def mixed_tree(*, tiny_per_leaf: int = 30, mib_files: int = 20, big_size: int = 64 * MiB + 4321) -> Tree:
    """>= 3 levels, > 500 files: one folder of 120 tiny files (3 pages), 4x3 leaf folders of tiny files,
    ~1 MiB files, and one large file of odd size (its last part is short)."""
    tree = Tree()
    many = tree.folder(tree.children, "many")
    for i in range(120):
        tree.text_file(many, "many/", f"f{i:03d}.txt", f"tiny file {i}\n" * (i % 7))
    for a in range(4):
        top = tree.folder(tree.children, f"top{a}")
        for b in range(3):
            leaf = tree.folder(top, f"mid{b}")
            for c in range(tiny_per_leaf):
                tree.text_file(leaf, f"top{a}/mid{b}/", f"t{c}.csv", f"{a},{b},{c}\n")
    mb = tree.folder(tree.children, "mb")
    for i in range(mib_files):
        tree.seeded_file(mb, "mb/", f"m{i}.bin", MiB + 997 * i)
    tree.seeded_file(tree.children, "", "big.bin", big_size)
    return tree


MANIFEST = "SYNAPSE_METADATA_MANIFEST.tsv"
CSV_MANIFEST = "manifest.csv"
MANIFESTS = (MANIFEST, CSV_MANIFEST)


def local_tree(root: Path, *, metadata: bool = False) -> Dict[str, str]:
    """Relative path -> MD5 of every file under ``root``, hidden partials included (they must not remain).
    synclient's own metadata (the ``.synclient`` index folder and manifests) only with ``metadata=True``."""
    found: Dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        if not metadata:
            dirs[:] = [d for d in dirs if not (Path(folder) == Path(root) and d == ".synclient")]
            files = [f for f in files if f not in MANIFESTS]
        for name in files:
            path = Path(folder) / name
            md5 = hashlib.md5()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(4 * MiB), b""):
                    md5.update(block)
            found[path.relative_to(root).as_posix()] = md5.hexdigest()
    return found


KILLED_SYNC = """
import sys
from synclient import Platform, TransferConfig, sync_from_platform
endpoint, token, entity, target, workers, part = sys.argv[1:7]
config = TransferConfig(max_workers=int(workers), multipart_threshold=int(part), part_size=int(part))
sync_from_platform(entity, target, platform=Platform(endpoint=endpoint, token=token), config=config)
"""


def sigkill_sync_after(
    emu, project: str, target: Path, served: int, *, workers: int = 4, part_size: int = 16 * MiB
) -> int:
    """Run a library sync in a child, SIGKILL it once the emulator served ``served`` data bytes; return the bytes
    served by then (waits on the emulator's count, not on time: at most 60 s)."""
    import signal
    import subprocess
    import sys
    import time

    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_SYNC, emu.endpoint, emu.token, project, str(target), str(workers), str(part_size)]
    )
    deadline = time.monotonic() + 60
    while emu.stats()["data_bytes"] < served and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait()
    return emu.stats()["data_bytes"]


def assert_tree_matches(root: Path, expected: Dict[str, str]) -> None:
    found = local_tree(root)
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    wrong = sorted(p for p in set(found) & set(expected) if found[p] != expected[p])
    assert not missing and not extra and not wrong, (
        f"missing {missing[:5]} ({len(missing)}), extra {extra[:5]} ({len(extra)}), wrong {wrong[:5]}"
    )


def rest_bound(tree: Tree, *, constant: int = 3) -> Tuple[int, int]:
    """(bound on REST calls of a first sync, number of listing pages) for issue 3 item 3."""
    pages = tree.listing_pages()
    return tree.file_count + math.ceil(tree.file_count / 100) + pages + constant, pages
