"""The external listener: a plain web server for the bytes of external file handles.

Synapse records an ``ExternalFileHandle`` as a URL on someone else's server and hands that URL out as is: no
signature, no expiry, no auth. This listener plays that server for the handles the emulator serves itself, at
``/ext/<handle id>/<quoted file name>``. It shares the data listener's body code and fault knobs
(``ObjectHandler``); ``external_ranges`` and ``external_content_length`` make it a simpler server than S3.
It never looks at the platform token, and counts requests that carry one (``auth_headers_on_external``).
"""

from __future__ import annotations

import os
from typing import Optional, Tuple
from urllib.parse import unquote, urlsplit

from .data import ObjectHandler, ServePolicy
from .stats import Plane
from .store import EXTERNAL_PATH_PREFIX, FileHandle, HandleStorage


class ExternalHandler(ObjectHandler):
    plane = Plane.EXTERNAL

    def _policy(self, knobs) -> ServePolicy:
        return ServePolicy(
            honour_range=knobs.external_ranges,
            advertise_ranges=knobs.external_ranges,
            send_length=knobs.external_content_length,
        )

    def _error_body(self, code: str, message: str) -> Tuple[str, bytes]:
        return "text/plain; charset=utf-8", f"{message}\n".encode()

    def _serve(self, head_only: bool) -> None:
        context = self.server.context
        self._count_request()
        self.read_body()
        handle = self._handle_at(urlsplit(self.path).path)
        blob = context.store.blob_path(handle.md5) if handle is not None else None
        if handle is None or blob is None or not os.path.exists(blob):
            self._error(404, "NotFound", "Not Found", head_only)
            return
        with open(blob, "rb") as source:
            size = os.fstat(source.fileno()).st_size
            self._send_object(source, size, handle.md5, head_only, context.knobs)

    def _handle_at(self, path: str) -> Optional[FileHandle]:
        """The emulator-served handle whose URL path this is (the file name part must match too)."""
        if not path.startswith(EXTERNAL_PATH_PREFIX):
            return None
        handle_ref = path[len(EXTERNAL_PATH_PREFIX) :].split("/", 1)[0]
        if not handle_ref.isdigit():
            return None
        handle = self.server.context.store.file_handle(int(handle_ref))
        if handle is None or handle.storage is not HandleStorage.EXTERNAL:
            return None
        url = handle.external_url
        return handle if url is not None and unquote(url) == unquote(path) else None
