"""Concurrent traversal of the remote tree on the shared pool.

Each children page is one LISTING task; it creates the local folders it finds, hands every file header to the
runner, and submits its sub-folders and its own next page as new tasks. Nothing waits inside the pool.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Optional

from synclient.client import Platform
from synclient.errors import SynclientError
from synclient.models import EntityHeader, EntityType
from synclient.sync.paths import TargetDirectory
from synclient.transfer.pool import Priority, TaskPool

log = logging.getLogger("synclient.sync")

FileFound = Callable[[EntityHeader, Path], None]
EntityFailed = Callable[[EntityHeader, Optional[Path], SynclientError], None]


class TreeWalker:
    def __init__(self, *, platform: Platform, pool: TaskPool, target: TargetDirectory,
                 on_file: FileFound, on_failure: EntityFailed) -> None:
        self._platform = platform
        self._pool = pool
        self._target = target
        self._on_file = on_file
        self._on_failure = on_failure
        self._include = (EntityType.FOLDER, EntityType.FILE)

    def walk(self, container: EntityHeader, local_dir: Path) -> None:
        """Start listing ``container`` into ``local_dir`` (returns at once; the pool does the work)."""
        self._pool.submit(Priority.LISTING, self._list_page, container, local_dir, None)

    def _list_page(self, container: EntityHeader, local_dir: Path, page_token: Optional[str]) -> None:
        try:
            page = self._platform.list_children(container.id, include_types=self._include, page_token=page_token)
        except SynclientError as exc:
            self._on_failure(container, local_dir, exc)
            return
        if page.next_page_token:  # keep the next page flowing before working through this one
            self._pool.submit(Priority.LISTING, self._list_page, container, local_dir, page.next_page_token)
        for header in page.headers:
            try:
                if header.type is EntityType.FOLDER:
                    folder = self._target.make_folder(local_dir, header.name)
                    self._pool.submit(Priority.LISTING, self._list_page, header, folder, None)
                elif header.type is EntityType.FILE:
                    self._on_file(header, self._target.child(local_dir, header.name))
            except SynclientError as exc:
                self._on_failure(header, None, exc)
