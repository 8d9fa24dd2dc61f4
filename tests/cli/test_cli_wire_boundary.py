"""Issue 29: a hostile answer fails its entity alone, and the run ends with its summary (defects 9 and 10); ids are
canonical from the moment they are parsed (defect 11); a query cell with a Unicode digit is one line (defect 8).

A small rewriting proxy stands between the CLI and the emulator: it forwards every REST call and garbles the answers
of chosen entities as a broken or malicious server would (a file handle id ``../../../PWNED``, a ``contentSize`` of
1e20, a children listing that repeats its page token for ever). The data plane (pre-signed URLs) goes to the
emulator directly.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator, List, Optional

import pytest
import requests
from cli_support import isolated_env, run_cli

from synclient.emulator import Emulator

SPEC = {
    "projects": [
        {
            "name": "hostile",
            "children": [
                {"type": "file", "name": "good1.txt", "content": "one\n"},
                {"type": "file", "name": "pwned.txt", "content": "handle id with path characters\n"},
                {"type": "file", "name": "huge.txt", "content": "a size of 1e20\n"},
                {
                    "type": "folder",
                    "name": "fine",
                    "children": [{"type": "file", "name": "good2.txt", "content": "two\n"}],
                },
                {
                    "type": "folder",
                    "name": "loop",
                    "children": [{"type": "file", "name": "inside.txt", "content": "in\n"}],
                },
            ],
        }
    ]
}

#: (method, path, request body) -> a rewritten request body (None: as sent)
RewriteRequest = Callable[[str, str, Optional[dict]], Optional[dict]]
#: (method, path, request body, answer) -> a rewritten answer (None: as answered)
RewriteAnswer = Callable[[str, str, Optional[dict], object], object]


@contextlib.contextmanager
def rewriting_proxy(upstream: str, on_request: RewriteRequest, on_answer: RewriteAnswer) -> Iterator[List[str]]:
    """A REST proxy on a free 127.0.0.1 port in front of ``upstream``; yields its root URL and the calls it saw."""
    calls: List[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw) if raw else None
            calls.append(f"{self.command} {self.path}")
            sent = on_request(self.command, self.path, body)
            if sent is not None:
                raw = json.dumps(sent).encode()
            headers = {
                name: self.headers[name]
                for name in ("Authorization", "Content-Type", "Accept")
                if self.headers.get(name)
            }
            answer = requests.request(
                self.command, upstream + self.path, data=raw or None, headers=headers, allow_redirects=False, timeout=30
            )
            content = answer.content
            if answer.ok and content and "json" in answer.headers.get("Content-Type", ""):
                rewritten = on_answer(self.command, self.path, body, json.loads(content))
                if rewritten is not None:
                    content = json.dumps(rewritten).encode()
            self.send_response(answer.status_code)
            for name in ("Content-Type", "Retry-After", "Location"):
                if answer.headers.get(name):
                    self.send_header(name, answer.headers[name])
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_POST = do_PUT = do_DELETE = do_GET

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="rewriting-proxy", daemon=True)
    thread.start()
    try:
        calls.insert(0, f"http://127.0.0.1:{server.server_address[1]}")
        yield calls
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def hostile_emulator():
    with Emulator() as emu:
        project = emu.seed_spec(SPEC)["hostile"]
        emu.project = project
        emu.at = lambda path: emu.resolve(project, path)
        yield emu


def _bundle_of(path: str) -> Optional[str]:
    match = re.fullmatch(r"/repo/v1/entity/(syn[0-9]+)(?:/version/[0-9]+)?/bundle2", path)
    return match.group(1) if match else None


def test_hostile_answers_fail_their_entities_alone_and_the_run_ends_with_its_summary(hostile_emulator, tmp_path):
    emu = hostile_emulator
    pwned, huge, loop = emu.at("pwned.txt"), emu.at("huge.txt"), emu.at("loop")

    def on_request(method: str, path: str, body: Optional[dict]) -> Optional[dict]:
        if path.endswith("/entity/children") and body and body.get("parentId") == loop:
            return {key: value for key, value in body.items() if key != "nextPageToken"}  # always its first page
        return None

    def on_answer(method: str, path: str, body: Optional[dict], answer):
        if path.endswith("/entity/children") and body and body.get("parentId") == loop:
            return dict(answer, nextPageToken="the-same-token")  # a next page, for ever
        entity_id = _bundle_of(path)
        if entity_id == pwned:
            answer["entity"]["dataFileHandleId"] = "../../../PWNED"
            for handle in answer["fileHandles"]:
                handle["id"] = "../../../PWNED"
            return answer
        if entity_id == huge:
            for handle in answer["fileHandles"]:
                handle["contentSize"] = 1e20
            return answer
        return None

    with rewriting_proxy(emu.endpoint, on_request, on_answer) as calls:
        env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=calls[0], SYNCLIENT_AUTH_TOKEN=emu.token)
        target = tmp_path / "t"
        result = run_cli("--json", "get", "-r", emu.project, "--path", str(target), env=env)
        listings = sum(call.endswith("/entity/children") for call in calls[1:])
        again = run_cli("get", "-r", emu.project, "--path", str(target), env=env)
    assert result.returncode == 1, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    report = result.json()["report"]
    assert report["downloaded"] == 3 and report["failed"] == 3, report
    failures = {file["entity_id"]: file["error"] for file in result.json()["files"] if file["status"] == "failed"}
    assert set(failures) == {pwned, huge, loop}, failures
    for entity_id, field in ((pwned, "'dataFileHandleId'"), (huge, "'contentSize'"), (loop, "repeats the next page")):
        assert "malformed answer" in failures[entity_id] and field in failures[entity_id]
    assert (target / "good1.txt").read_text() == "one\n" and (target / "fine" / "good2.txt").read_text() == "two\n"
    assert (target / "loop" / "inside.txt").read_text() == "in\n"  # the loop's first page was a good one
    assert not (target / "pwned.txt").exists() and not (target / "huge.txt").exists()
    assert not list(tmp_path.rglob("*PWNED*"))  # nothing was named after the hostile handle id
    assert listings == 4  # the root, fine, and loop twice: the listing ended at the repeated token
    # without --json: a line per failure and the summary, as for any failed file
    assert again.returncode == 1 and "internal error" not in again.stderr, again.stderr
    assert "0 downloaded, 3 skipped, 3 failed" in again.stdout, again.stdout
    assert f"failed: {pwned} " in again.stderr and "malformed answer" in again.stderr


def test_an_id_with_leading_zeros_is_the_same_entity(hostile_emulator, tmp_path):
    """Defect 11: ``get syn000123 syn124`` said the first did not exist, though it worked alone."""
    emu = hostile_emulator
    good1, good2 = emu.at("good1.txt"), emu.at("fine/good2.txt")
    padded = "syn000" + good1[3:]
    env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=emu.endpoint, SYNCLIENT_AUTH_TOKEN=emu.token)
    result = run_cli("--json", "get", padded, good2.upper(), "--path", str(tmp_path / "t"), env=env)
    assert result.returncode == 0, result.stderr
    document = result.json()
    assert document["entities"] == [good1, good2] and document["report"]["downloaded"] == 2
    assert (tmp_path / "t" / "good1.txt").read_text() == "one\n"


def test_ls_long_lists_every_entry_when_a_file_handle_answer_is_malformed(tmp_path):
    """``ls -l``: a file whose bundle the wire boundary refuses (a size of 1e20, 3.5, -1 ...) is that file's failure
    line and an unknown size; every entry is still listed (it was one error line for the whole listing)."""
    with Emulator(hostile_rate=1.0, hostile_kinds="sizes", fault_seed=7) as emu:
        project = emu.seed_spec(SPEC)["hostile"]
        env = isolated_env(tmp_path, SYNCLIENT_ENDPOINT=emu.endpoint, SYNCLIENT_AUTH_TOKEN=emu.token)
        listing = run_cli("ls", "-r", "-l", project, env=env)
        document = run_cli("--json", "ls", "-r", "-l", project, env=env)
    assert listing.returncode == 1, listing.stderr
    for name in ("good1.txt", "pwned.txt", "huge.txt", "good2.txt", "inside.txt"):
        assert name in listing.stdout
    failures = [line for line in listing.stderr.splitlines() if line.startswith("synclient: failed: syn")]
    assert failures and all("malformed answer" in line for line in failures), listing.stderr
    assert "Traceback" not in listing.stderr and "internal error" not in listing.stderr
    assert document.returncode == 1 and len(document.json()["failures"]) == len(failures)
