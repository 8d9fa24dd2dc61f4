"""Helpers shared by the emulator unit tests (a unique module name: tests dirs have no __init__)."""

from __future__ import annotations

import requests

#: names Synapse would refuse ("a/b"): a hostile server's, so the spec says "names": "unchecked"
HOSTILE_SPEC = {
    "names": "unchecked",
    "projects": [
        {
            "name": "p",
            "children": [
                {
                    "type": "folder",
                    "name": "d",
                    "children": [
                        {"type": "file", "name": "a.txt", "content": "text"},
                        {"type": "file", "name": "..", "content": "dotdot"},
                        {"type": "file", "name": "a/b", "content": "slash"},
                    ],
                },
                {"type": "file", "name": "Case.txt", "content": "upper"},
                {"type": "file", "name": "case.txt", "content": "lower"},
                {"type": "file", "name": "big.bin", "size": 3 * 1024 * 1024 + 5, "seed": 7},
                {"type": "file", "name": "v.txt", "versions": [{"content": "v1"}, {"content": "v2"}]},
                {"type": "link", "name": "l", "target": "d/a.txt"},
                {"type": "link", "name": "lslash", "target": ["d", "a/b"]},
                {"type": "file", "name": "secret", "content": "x", "deny": True},
                {"type": "file", "name": "nodownload", "content": "y", "deny": "download"},
                {
                    "type": "folder",
                    "name": "closed",
                    "deny": True,
                    "children": [{"type": "file", "name": "inner", "content": "z"}],
                },
                {"type": "file", "name": "n", "content": "x", "annotations": {"k": ["v"], "num": [1, 2]}},
            ],
        }
    ],
}


class Api:
    """A tiny authenticated client for the emulator's REST routes."""

    def __init__(self, emu, token=None):
        self.emu = emu
        self.session = requests.Session()
        if token is not False:
            self.session.headers["Authorization"] = f"Bearer {token or emu.token}"

    def get(self, path, **kwargs):
        return self.session.get(self.emu.endpoint + path, **kwargs)

    def post(self, path, body=None, **kwargs):
        return self.session.post(self.emu.endpoint + path, json=body, **kwargs)

    def url_for(self, entity_id):
        bundle = self.post(f"/repo/v1/entity/{entity_id}/bundle2", {"includeEntity": True}).json()
        handle = bundle["entity"]["dataFileHandleId"]
        answer = self.post(
            "/file/v1/fileHandle/batch",
            {
                "requestedFiles": [
                    {"fileHandleId": handle, "associateObjectId": entity_id, "associateObjectType": "FileEntity"}
                ],
                "includePreSignedURLs": True,
            },
        )
        return answer.json()["requestedFiles"][0]["preSignedURL"]


def assert_spec_node_refused(emulator, node: dict, message: str) -> None:
    """Seeding ``node`` as the third child of a project (after a folder ``d`` and a file ``f``) fails with a
    SpecError that names the node and says ``message``, and leaves no project behind."""
    import pytest

    from synclient.emulator import SpecError

    spec = {
        "projects": [
            {
                "name": "p",
                "children": [
                    {"type": "folder", "name": "d"},
                    {"type": "file", "name": "f", "content": "x"},
                    {"name": "x", **node},
                ],
            }
        ]
    }
    with pytest.raises(SpecError, match=r"projects\[0\]\.children\[2\]") as raised:
        emulator.seed_spec(spec)
    assert message in str(raised.value)
    assert emulator.info()["projects"] == {}
