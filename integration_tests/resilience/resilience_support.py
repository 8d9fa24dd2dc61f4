"""Helpers of the resilience suite: trees, the byte-for-byte check with counts, the figures recorder and the
secret watch (token / signed-URL signature in client logs, reprs, errors and reports; Authorization on data).

Figures are measured, never typed: every scenario records what it checked, and the session writes them as JSON
(``$SYNCLIENT_RELIABILITY_JSON`` or ``<tmp>/synclient-reliability/last-run.json``);
``integration_tests/resilience/figures.py`` turns that JSON into the table of ``docs/reliability.md``.
"""

from __future__ import annotations

import json
import logging
import os
import platform as _platform
import re
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterable, List

from synctrees import MiB, Tree, local_tree

from synclient import Platform, TransferConfig, sync_from_platform
from synclient.emulator import Emulator

KiB = 1024
PARTIAL_SUFFIXES = (".synclient-partial", ".synclient-partial.parts")
#: small parts so that a few MiB exercise the multipart path
CONFIG = dict(max_workers=8, multipart_threshold=1 * MiB, part_size=256 * KiB, stall_timeout=1.0, max_attempts=8)


def long_mode(config) -> bool:
    return bool(config.getoption("--long", default=False)) or os.environ.get("SYNCLIENT_LONG") == "1"


def figures_path() -> Path:
    given = os.environ.get("SYNCLIENT_RELIABILITY_JSON")
    if given:
        return Path(given)
    return Path(tempfile.gettempdir()) / "synclient-reliability" / "last-run.json"


# -- trees ---------------------------------------------------------------------------------------------------------


def small_mixed_tree(name: str = "p", *, folder_files: int = 60, mid_files: int = 6) -> Tree:
    """~90 files, 3 levels, a folder of 60 (two listing pages), files of 100-600 KiB, two multipart files of odd
    size (last part short), an empty file."""
    tree = Tree(name)
    many = tree.folder(tree.children, "many")
    for i in range(folder_files):
        tree.text_file(many, "many/", f"n{i:03d}.txt", f"line {i}\n" * (i % 5 + 1))
    level1 = tree.folder(tree.children, "a")
    level2 = tree.folder(level1, "b")
    level3 = tree.folder(level2, "c")
    for depth, (folder, prefix) in enumerate(((level1, "a/"), (level2, "a/b/"), (level3, "a/b/c/"))):
        for i in range(5):
            tree.text_file(folder, prefix, f"d{depth}-{i}.csv", f"{depth},{i}\n" * 40)
    mid = tree.folder(tree.children, "mid")
    for i in range(mid_files):
        tree.seeded_file(mid, "mid/", f"m{i}.bin", 100 * KiB + 97 * KiB * i + i)
    tree.seeded_file(tree.children, "", "big1.bin", 3 * MiB + 123)
    tree.seeded_file(tree.children, "", "big2.bin", 2 * MiB + 7)
    tree.text_file(tree.children, "", "empty.txt", "")
    return tree


def expected_sizes(tree: Tree) -> Dict[str, int]:
    sizes: Dict[str, int] = {}

    def walk(children, prefix):
        for child in children:
            path = prefix + child["name"]
            if child["type"] == "folder":
                walk(child["children"], path + "/")
            elif child["type"] == "file":
                sizes[path] = child["size"] if "size" in child else len(child.get("content", "").encode())

    walk(tree.children, "")
    return sizes


def platform_for(emu, **kwargs) -> Platform:
    return Platform(endpoint=emu.endpoint, token=emu.token, **kwargs)


def impatient_platform(emu) -> Platform:
    """For cases where every try fails on purpose: 3 tries with sub-second backoff instead of 10 with up to 20 s."""
    from synclient.platform.rest import RetryPolicy

    return platform_for(emu, retry=RetryPolicy(max_attempts=3, initial_backoff=0.05, max_backoff=0.2))


# -- checks ----------------------------------------------------------------------------------------------------------


def is_partial(rel_path: str) -> bool:
    return rel_path.endswith(PARTIAL_SUFFIXES)


def final_path_report(root: Path, expected: Dict[str, str]) -> Dict[str, List[str]]:
    """Files at final paths (not partial data, not synclient's own metadata) compared with what they must hold."""
    found = local_tree(root)
    finals = {p: m for p, m in found.items() if not is_partial(p)}
    return {
        "wrong": sorted(p for p, m in finals.items() if p in expected and m != expected[p]),
        "unknown": sorted(p for p in finals if p not in expected),
        "missing": sorted(p for p in expected if p not in finals),
        "partial": sorted(p for p in found if is_partial(p)),
    }


def _size(root: Path, rel: str) -> int:
    return os.lstat(root / rel).st_size


class Scenario:
    """What one scenario checked; recorded into FIGURES when the ``with`` block ends (also on failure)."""

    def __init__(self, name: str, group: str) -> None:
        self.name, self.group = name, group
        self.tries = 0
        self.files = self.bytes = self.corruptions = 0
        self.started = time.monotonic()
        self.notes: List[str] = []

    def check(self, root: Path, expected: Dict[str, str], *, complete: bool = True) -> None:
        """Byte-for-byte check of ``root``. ``complete``: every expected file present, nothing else, no partial
        file left; otherwise (after an interruption) every file at a final path must already be right."""
        report = final_path_report(Path(root), expected)
        checked = [p for p in expected if p not in report["missing"]]
        self.files += len(checked)
        self.bytes += sum(_size(Path(root), p) for p in checked)
        self.corruptions += len(report["wrong"]) + len(report["unknown"])
        assert not report["wrong"], f"wrong bytes at final paths: {report['wrong'][:5]}"
        assert not report["unknown"], f"unexpected files at final paths: {report['unknown'][:5]}"
        if complete:
            assert not report["missing"], f"missing: {report['missing'][:5]} ({len(report['missing'])})"
            assert not report["partial"], f"partial data left: {report['partial'][:5]}"

    def absent(self, root: Path, rel_paths: Iterable[str]) -> None:
        """Files that must NOT be at their final path (a wrong file must never be accepted)."""
        rel_paths = list(rel_paths)
        present = [p for p in rel_paths if os.path.lexists(Path(root) / p)]
        self.files += len(rel_paths)
        self.corruptions += len(present)
        assert not present, f"files that must not exist were written: {present[:5]}"


class Figures:
    def __init__(self) -> None:
        self.rows: List[dict] = []
        self._lock = threading.Lock()

    @contextmanager
    def scenario(self, name: str, group: str):
        scenario = Scenario(name, group)
        leaks_before = SECRETS.leaks
        ok = False
        try:
            yield scenario
            ok = True
        finally:
            row = dict(
                scenario=name,
                group=group,
                tries=max(scenario.tries, 1),
                files_checked=scenario.files,
                bytes_checked=scenario.bytes,
                corruptions=scenario.corruptions,
                token_leaks=SECRETS.leaks - leaks_before,
                seconds=round(time.monotonic() - scenario.started, 2),
                passed=ok,
                notes="; ".join(scenario.notes),
            )
            with self._lock:
                self.rows.append(row)

    def document(self, **extra) -> dict:
        return {
            "python": sys.version.split()[0],
            "machine": _platform.machine(),
            "cpus": os.cpu_count(),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
            "rows": self.rows,
            **extra,
        }


FIGURES = Figures()


# -- secrets ---------------------------------------------------------------------------------------------------------

_SIGNATURE = re.compile(r"(?:X-Amz-)?Signature=[0-9A-Za-z%]{8,}")


class SecretWatch:
    """Counts leaks of any emulator token or any signed-URL signature in what the client shows."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.tokens: set = set()
        self.leaks = 0
        self.leak_samples: List[str] = []
        self.lines = 0
        self.texts = 0
        self.data_requests = 0
        self.auth_on_data = 0

    def add_token(self, token: str) -> None:
        with self._lock:
            self.tokens.add(token)

    def scan(self, text: str, where: str = "text") -> int:
        with self._lock:
            tokens = list(self.tokens)
            self.texts += 1
        found = sum(text.count(token) for token in tokens if token) + len(_SIGNATURE.findall(text))
        if found:
            with self._lock:
                self.leaks += found
                if len(self.leak_samples) < 5:
                    self.leak_samples.append(f"{where}: {text[:300]!r}")
        return found

    def handler(self) -> logging.Handler:
        watch = self

        class _Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if record.name.startswith("synclient.emulator"):
                    return  # the server's own access log: it is allowed to see its URLs
                try:
                    text = record.getMessage()
                    if record.exc_info:
                        text += logging.Formatter().formatException(record.exc_info)
                except Exception:  # noqa: BLE001 - a bad log call must not break the watch
                    return
                with watch._lock:
                    watch.lines += 1
                watch.scan(text, f"log {record.name}")

        return _Handler(level=logging.DEBUG)

    def watch_results(self, results_or_error) -> None:
        """reprs, errors and the JSON report of a sync outcome (results, or a SyncError)."""
        if isinstance(results_or_error, BaseException):
            results = getattr(results_or_error, "results", None) or []
        else:
            results = results_or_error
        parts = [repr(results_or_error), str(results_or_error)]
        for result in list(results or []):
            parts.append(repr(result))
            if getattr(result, "error", None) is not None:
                parts += [str(result.error), repr(result.error)]
            if hasattr(result, "to_json"):
                parts.append(json.dumps(result.to_json()))
        report = getattr(results, "report", None)
        if report is not None:
            parts += [repr(report), json.dumps(report.to_json())]
        self.scan("\n".join(parts), "results/report")

    def summary(self) -> dict:
        return {
            "log_lines_scanned": self.lines,
            "texts_scanned": self.texts,
            "token_or_signature_leaks": self.leaks,
            "leak_samples": self.leak_samples,
            "data_requests_watched": self.data_requests,
            "authorization_headers_on_data": self.auth_on_data,
        }


SECRETS = SecretWatch()


def sync(emu, entity: str, target: Path, **kwargs):
    """``sync_from_platform`` with the suite's defaults; every outcome passes the secret watch."""
    kwargs.setdefault("config", TransferConfig(**CONFIG))
    kwargs.setdefault("progress", False)
    platform = kwargs.pop("platform", None) or platform_for(emu)
    try:
        results = sync_from_platform(entity, target, platform=platform, **kwargs)
    except Exception as error:
        SECRETS.watch_results(error)
        SECRETS.scan(repr(platform), "platform repr")
        raise
    SECRETS.watch_results(results)
    SECRETS.scan(repr(platform), "platform repr")
    return results


# -- emulators ---------------------------------------------------------------------------------------------------------


class EmulatorRegistry:
    def __init__(self) -> None:
        self._started: list = []

    def start(self, data_dir=None, **knobs) -> Emulator:
        emu = Emulator(data_dir=str(data_dir) if data_dir else None, **knobs)
        emu.start()
        SECRETS.add_token(emu.token)
        self._started.append(emu)
        return emu

    def add(self, emu) -> None:
        """An emulator started elsewhere (an ``EmulatorProcess``): watched and stopped like the others."""
        SECRETS.add_token(emu.token)
        self._started.append(emu)

    def close(self) -> None:
        problems = []
        for emu in reversed(self._started):
            try:
                if hasattr(emu, "total"):
                    requests_, auth = emu.total("data_requests"), emu.total("auth_headers_on_data")
                else:
                    stats = emu.stats()
                    requests_, auth = stats["data_requests"], stats["auth_headers_on_data"]
                SECRETS.data_requests += requests_
                SECRETS.auth_on_data += auth
                if auth:
                    problems.append(auth)
            finally:
                emu.stop()
        self._started.clear()
        assert not problems, f"Authorization headers reached the data listener: {problems}"
