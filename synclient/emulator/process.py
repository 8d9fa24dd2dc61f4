"""``EmulatorProcess``: the emulator in a child process (``python -m synclient.emulator serve``), for tests and
benchmarks that must not share their interpreter (and its lock) with the server, or that kill it mid-run.

It feels like the in-process :class:`~synclient.emulator.Emulator`: the same constructor (data dir, knobs, ports,
profile, TLS), ``endpoint``/``token``/``ca_bundle``, ``stats()``, ``set_knobs()`` and the admin operations (over
the ``/emulator/...`` routes), ``start``/``stop``/``restart`` and ``with``. On top: ``kill()`` (SIGKILL, as a
crashed server) and ``start()`` again on the same store and ports, the child's CPU time, counters summed over
restarts.

Readiness is the child's JSON line on stdout (printed once it listens), never a sleep. The child is always reaped:
``stop()`` (SIGTERM, then SIGKILL after a hang guard), ``kill()``, a failed start; and it reads its stdin pipe to
the end (``--stop-at-stdin-eof``), so even if this process dies the server stops with it.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Dict, Iterable, List, Optional, Sequence, Tuple, Union
from urllib.parse import urlencode, urlsplit

from .cli import knob_arguments
from .knobs import Knobs, profile_knobs

__all__ = ["EmulatorProcess", "EmulatorProcessError", "Seed"]

PathLike = Union[str, "os.PathLike[str]"]
Content = Union[bytes, str, Iterable[bytes]]
#: how much of the child's stderr an error quotes
STDERR_TAIL = 2000


class EmulatorProcessError(RuntimeError):
    """The child did not become ready, or did not stop; the message quotes the tail of its stderr."""


@dataclass(frozen=True)
class Seed:
    """What the child seeds before it first serves (one of them); restarts reuse the store as it is.

    ``spec``: a tree spec (as ``Emulator.seed_spec``); ``spec_file``: one in a JSON file; ``directory``: a local
    tree as a project; ``synthetic``: ``files=400,depth=3,fanout=10,size=50`` (``serve --synthetic``)."""

    spec: Optional[dict] = None
    spec_file: Optional[PathLike] = None
    directory: Optional[PathLike] = None
    synthetic: Optional[str] = None
    project_name: Optional[str] = None

    def __post_init__(self) -> None:
        given = [value for value in (self.spec, self.spec_file, self.directory, self.synthetic) if value is not None]
        if len(given) != 1:
            raise ValueError("Seed: give one of spec, spec_file, directory, synthetic")

    def arguments(self, scratch: Path) -> List[str]:
        """The ``serve`` flags that seed it (a ``spec`` is written to a file in ``scratch`` first)."""
        arguments: List[str] = []
        if self.spec is not None:
            spec_file = scratch / "seed-spec.json"
            spec_file.write_text(json.dumps(self.spec), encoding="utf-8")
            arguments += ["--seed-spec", str(spec_file)]
        elif self.spec_file is not None:
            arguments += ["--seed-spec", os.fspath(self.spec_file)]
        elif self.directory is not None:
            arguments += ["--seed-dir", os.fspath(self.directory)]
        elif self.synthetic is not None:
            arguments += ["--synthetic", self.synthetic]
        if self.project_name is not None:
            arguments += ["--project-name", self.project_name]
        return arguments


class EmulatorProcess:
    """``python -m synclient.emulator serve`` in a child process, until :meth:`stop`.

    ``data_dir=None``: a temporary store, removed by :meth:`stop` (it survives :meth:`kill` and :meth:`restart`).
    Knobs as for ``Emulator``: a ``Knobs``, ``profile="synapse"`` and field overrides, checked here before any
    child starts. Ports 0 are picked by the child at its first start and kept for every later one, so clients
    keep their endpoint. ``start_timeout`` / ``stop_timeout`` only guard against a hang (seeding a big synthetic
    tree or removing a big store takes long on a loaded machine); they are not measures of speed.
    """

    def __init__(
        self,
        data_dir: Optional[PathLike] = None,
        knobs: Optional[Knobs] = None,
        *,
        port: int = 0,
        data_port: int = 0,
        external_port: int = 0,
        profile: Optional[str] = None,
        tls: bool = False,
        seed: Optional[Seed] = None,
        start_timeout: float = 600.0,
        stop_timeout: float = 120.0,
        **knob_overrides,
    ) -> None:
        knobs = knobs or Knobs()
        if profile is not None:  # the profile's values, then explicit overrides on top (as Emulator)
            knob_overrides = {**profile_knobs(profile), **knob_overrides}
        self.knobs = knobs.replace(**knob_overrides) if knob_overrides else knobs
        self.tls = tls
        self._given_data_dir = Path(data_dir) if data_dir is not None else None
        self._ports: Tuple[int, int, int] = (port, data_port, external_port)
        self._seed = seed
        self._seeded = False
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self._scratch: Optional[Path] = None  # the child's TMPDIR (TLS files), a spec file, a temporary store
        self._process: Optional[subprocess.Popen] = None
        self._stderr: Optional[IO[bytes]] = None
        self._ssl: Optional[ssl.SSLContext] = None
        self._banked: Dict[str, float] = {}  # numeric counters of the runs before the last restart
        self.endpoint = ""
        self.data_endpoint = ""
        self.external_endpoint = ""
        self.token = ""
        self.ca_bundle: Optional[str] = None
        #: exit code of the last child that ended (negative: the signal that ended it); None while one runs
        self.returncode: Optional[int] = None

    # --- lifecycle ----------------------------------------------------------------------------
    def __enter__(self) -> EmulatorProcess:
        try:
            return self.start()
        except BaseException:
            self.stop()  # __exit__ will not run: remove the temporary store and files here
            raise

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def data_dir(self) -> Path:
        if self._given_data_dir is not None:
            return self._given_data_dir
        return self._scratch_dir() / "store"

    @property
    def running(self) -> bool:
        return self._process is not None

    @property
    def pid(self) -> Optional[int]:
        return self._process.pid if self._process is not None else None

    def _scratch_dir(self) -> Path:
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="synclient-emulator-process-"))
        return self._scratch

    def _command(self) -> List[str]:
        port, data_port, external_port = self._ports
        command = [
            sys.executable,
            "-m",
            "synclient.emulator",
            "serve",
            "--stop-at-stdin-eof",
            "--data-dir",
            str(self.data_dir),
            "--port",
            str(port),
            "--data-port",
            str(data_port),
            "--external-port",
            str(external_port),
            *knob_arguments(self.knobs),
        ]
        if self.tls:
            command.append("--tls")
        if self._seed is not None and not self._seeded:
            command += self._seed.arguments(self._scratch_dir())
        return command

    def _environment(self) -> Dict[str, str]:
        """The child imports the synclient this process runs, and keeps its temporary files (the TLS CA) in the
        scratch folder, which :meth:`stop` removes even after a SIGKILL left them behind."""
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.environ.get("PYTHONPATH")
        return {
            **os.environ,
            "PYTHONPATH": package_root + (os.pathsep + path if path else ""),
            "TMPDIR": str(self._scratch_dir()),
        }

    def start(self) -> EmulatorProcess:
        """Start the child and return once it serves (its JSON line read); a child that exits or hangs first is
        reaped and raises :class:`EmulatorProcessError` with the tail of its stderr."""
        if self._process is not None:
            return self
        command = self._command()  # before the child: bad input raises with nothing to clean up
        if self._stderr is not None:
            self._stderr.close()  # the previous child's
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=self._environment()
        )
        self.returncode = None
        try:
            self._ready(self._read_ready_line())
        except BaseException:
            self._end(signal.SIGKILL)
            raise
        self._seeded = True
        return self

    def _read_ready_line(self) -> str:
        """The child's first stdout line. A timer kills a child that stays silent (the hang guard): the read then
        ends at EOF like any child that exits early."""
        process = self._process
        assert process is not None and process.stdout is not None
        fired = threading.Event()

        def give_up() -> None:
            fired.set()
            process.kill()

        hang_guard = threading.Timer(self.start_timeout, give_up)
        hang_guard.daemon = True
        hang_guard.start()
        try:
            line = process.stdout.readline()
        finally:
            hang_guard.cancel()
        if line.strip():
            return line.decode("utf-8", "replace")
        code = process.wait()
        why = (
            f"printed nothing within {self.start_timeout:g} s and was killed"
            if fired.is_set()
            else f"exited with code {code} before it was ready"
        )
        raise EmulatorProcessError(f"the emulator {why}; its stderr ends: {self.stderr_tail() or '(empty)'}")

    def _ready(self, line: str) -> None:
        try:
            info = json.loads(line)
            endpoints = [str(info[key]) for key in ("endpoint", "data_endpoint", "external_endpoint")]
            token = str(info["token"])
        except (ValueError, KeyError, TypeError):
            raise EmulatorProcessError(
                f"the emulator's ready line is not its JSON info: {line.strip()[:300]!r}; "
                f"its stderr ends: {self.stderr_tail() or '(empty)'}"
            ) from None
        self.endpoint, self.data_endpoint, self.external_endpoint = endpoints
        self.token = token
        self.ca_bundle = str(info["ca_bundle"]) if info.get("ca_bundle") else None  # a new CA at every start
        self._ssl = ssl.create_default_context(cafile=self.ca_bundle) if self.ca_bundle else None
        api, data, external = (urlsplit(endpoint).port or 0 for endpoint in endpoints)
        self._ports = (api, data, external)  # every later start comes back on these

    def stderr_tail(self, limit: int = STDERR_TAIL) -> str:
        """The last ``limit`` characters of the current (or last) child's stderr."""
        if self._stderr is None or self._stderr.closed:
            return ""
        self._stderr.flush()
        size = self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, size - limit))
        return self._stderr.read().decode("utf-8", "replace").strip()

    def _end(self, signum: int) -> None:
        """Send ``signum`` and reap the child (SIGKILL after ``stop_timeout`` if it does not end); close its pipes."""
        process = self._process
        if process is None:
            return
        timed_out = False
        try:
            if process.poll() is None:
                process.send_signal(signum)
                try:
                    process.wait(timeout=None if signum == signal.SIGKILL else self.stop_timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    process.kill()
                    process.wait()
        finally:
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()
            self.returncode = process.returncode
            self._process = None
        if timed_out:
            raise EmulatorProcessError(
                f"the emulator did not stop within {self.stop_timeout:g} s of SIGTERM and was "
                f"killed; its stderr ends: {self.stderr_tail() or '(empty)'}"
            )

    def _bank_counters(self) -> None:
        """Keep the numeric counters of the run about to end, for :meth:`total` (best effort: it may be gone)."""
        try:
            stats = self.stats()
        except (OSError, ValueError, EmulatorProcessError):
            return
        for key, value in stats.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self._banked[key] = self._banked.get(key, 0) + value

    def kill(self) -> None:
        """SIGKILL: the child dies with its connections open, as a crashed server would; :meth:`start` brings it
        back on the same store and ports."""
        if self._process is None:
            return
        self._bank_counters()
        self._end(signal.SIGKILL)

    def restart(self) -> None:
        """Stop the child (SIGTERM) and start another on the same store and ports, with the current knobs."""
        if self._process is not None:
            self._bank_counters()
        self._end(signal.SIGTERM)
        self.start()

    def stop(self) -> None:
        """Stop the child (SIGTERM; SIGKILL after ``stop_timeout``), reap it, and remove the temporary store and
        files. Safe to call again, and after :meth:`kill`."""
        try:
            self._end(signal.SIGTERM)
        finally:
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None

    # --- observability and knobs --------------------------------------------------------------
    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the running child so far (all its threads), from ``/proc``; 0.0 where
        there is none."""
        if self._process is None:
            return 0.0
        try:
            with open(f"/proc/{self._process.pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)

    def stats(self) -> Dict[str, object]:
        """The running child's counters (they start again at zero with every child)."""
        return self._admin("GET", "stats")

    def total(self, key: str) -> float:
        """A numeric counter summed over every child this object started (kills and restarts included)."""
        return self._banked.get(key, 0) + self.stats()[key]  # type: ignore[operator]

    def reset_stats(self) -> None:
        self._admin("POST", "stats/reset", {})

    def set_knobs(self, **changes) -> Knobs:
        """Change knobs live; later restarts keep them (as ``Emulator.restart``)."""
        self.knobs.replace(**changes)  # checked here first: a bad knob is a ValueError, as in-process
        self.knobs = Knobs(**self._admin("POST", "knobs", changes))
        return self.knobs

    def info(self) -> Dict[str, object]:
        """endpoint, data_endpoint, external_endpoint, token, projects (name -> id), ca_bundle (with TLS)."""
        return self._admin("GET", "info")

    # --- seeding and live mutations (the admin routes) ----------------------------------------
    def seed_spec(self, spec: dict) -> Dict[str, str]:
        return self._admin("POST", "seed", spec)["projects"]

    def resolve(self, project_id: str, path: Union[str, Sequence[str]]) -> str:
        path = path if isinstance(path, str) else "/".join(path)
        return self._admin("GET", "resolve?" + urlencode({"project": project_id, "path": path}))["id"]

    def add_version(self, entity_id: str, content: Content = b"", *, file_name: Optional[str] = None) -> int:
        body = {**_content_json(content), **({"file_name": file_name} if file_name is not None else {})}
        return self._admin("POST", f"entity/{entity_id}/version", body)["versionNumber"]

    def add_file(
        self,
        parent_id: str,
        name: str,
        content: Content = b"",
        *,
        file_name: Optional[str] = None,
        names: str = "synapse",
    ) -> str:
        body = {
            "parentId": parent_id,
            "name": name,
            "names": names,
            **_content_json(content),
            **({"file_name": file_name} if file_name is not None else {}),
        }
        return self._admin("POST", "file", body)["id"]

    def add_folder(self, parent_id: str, name: str, *, names: str = "synapse") -> str:
        return self._admin("POST", "folder", {"parentId": parent_id, "name": name, "names": names})["id"]

    def delete_entity(self, entity_id: str) -> None:
        self._admin("POST", f"entity/{entity_id}/delete", {})

    def rename_entity(self, entity_id: str, new_name: str, *, names: str = "synapse") -> None:
        self._admin("POST", f"entity/{entity_id}/rename", {"name": new_name, "names": names})

    def move_entity(self, entity_id: str, new_parent_id: str) -> None:
        self._admin("POST", f"entity/{entity_id}/move", {"parentId": new_parent_id})

    def refresh_views(self, view_id: Optional[str] = None) -> List[str]:
        return self._admin("POST", "views/refresh", {} if view_id is None else {"id": view_id})["refreshed"]

    def finish_view_builds(self) -> List[str]:
        """End every view build at once (see ``Emulator.finish_view_builds``)."""
        return self._admin("POST", "views/finish_builds", {})["finished"]

    def building_views(self) -> List[str]:
        return self._admin("GET", "views/building")["building"]

    def trash(self) -> List[Dict[str, object]]:
        return self._admin("GET", "trash")["trash"]

    def project_entities(self, project_id: str) -> List[Dict[str, object]]:
        return self._admin("GET", f"project/{project_id}/entities")["entities"]

    def set_annotation(self, entity_id: str, key: str, values: Optional[Sequence[object]]) -> None:
        self._admin("POST", f"entity/{entity_id}/annotation", {"key": key, "values": values})

    def set_created_on(self, entity_id: str, stamp: str) -> None:
        self._admin("POST", f"entity/{entity_id}/created_on", {"createdOn": stamp})

    def _admin(self, method: str, route: str, body: Optional[dict] = None):
        """One ``/emulator/`` call. As in-process: an unknown entity is a KeyError, bad input a ValueError."""
        if self._process is None:
            raise EmulatorProcessError("the emulator process is not running: start() it first")
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(
            f"{self.endpoint}/emulator/{route}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30, context=self._ssl) as answer:
                text = answer.read()
        except urllib.error.HTTPError as error:
            reason = _reason(error.read()) or error.reason
            if error.code == 404:
                raise KeyError(reason) from None
            if error.code in (400, 409):
                raise ValueError(reason) from None
            raise
        return json.loads(text) if text else {}


def _content_json(content: Content) -> Dict[str, str]:
    if isinstance(content, str):
        return {"content": content}
    data = bytes(content) if isinstance(content, (bytes, bytearray, memoryview)) else b"".join(content)
    return {"content_b64": base64.b64encode(data).decode("ascii")}


def _reason(body: bytes) -> str:
    try:
        return str(json.loads(body).get("reason", ""))
    except (ValueError, AttributeError):
        return body.decode("utf-8", "replace")[:300]
