"""A keyring backend for tests: a JSON file named by ``SYNCLIENT_TEST_KEYRING_FILE``.

Selected in subprocesses with ``PYTHON_KEYRING_BACKEND=fake_keyring.FileKeyring`` (this directory on PYTHONPATH),
so tests never touch the real keyring of the machine.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class FileKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    @staticmethod
    def _file() -> Path:
        return Path(os.environ["SYNCLIENT_TEST_KEYRING_FILE"])

    def _load(self) -> dict:
        path = self._file()
        return json.loads(path.read_text()) if path.exists() else {}

    def get_password(self, service, username):
        return self._load().get(f"{service}/{username}")

    def set_password(self, service, username, password):
        data = self._load()
        data[f"{service}/{username}"] = password
        self._file().write_text(json.dumps(data))

    def delete_password(self, service, username):
        data = self._load()
        if f"{service}/{username}" not in data:
            raise PasswordDeleteError("not found")
        del data[f"{service}/{username}"]
        self._file().write_text(json.dumps(data))
