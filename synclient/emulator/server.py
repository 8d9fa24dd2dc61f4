"""``Emulator``: the API, data and external listeners plus the store, as a context manager for tests."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

from . import seed as seeding
from .admin import Admin, EntityRef, parse_syn_id
from .admin_routes import AdminRoutes
from .api import ApiHandler
from .context import EmulatorContext
from .data import DataHandler
from .entity_names import NameRule
from .external import ExternalHandler
from .httpbase import EmulatorHTTPServer
from .knobs import Knobs, profile_knobs
from .routes import Routes
from .stats import Exchange
from .store import Store
from .tls import EmulatorTls

Content = Union[bytes, str, Iterable[bytes]]


class Emulator:
    """A local Synapse-compatible platform.

    ``with Emulator() as emu:`` starts its three listeners (API, data, external) on free ports of 127.0.0.1; with
    ``data_dir=None`` the store lives in a temporary directory removed on exit.
    Knob overrides are ``Knobs`` field names: ``Emulator(api_latency_ms=100)``;
    ``profile="synapse"`` applies the production limits first. ``tls=True`` serves all three over HTTPS with a
    certificate from a CA made at start, whose PEM file is ``ca_bundle`` (as real Synapse and S3 are HTTPS only).
    """

    def __init__(
        self,
        data_dir: Optional[str] = None,
        knobs: Optional[Knobs] = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        data_port: int = 0,
        external_port: int = 0,
        profile: Optional[str] = None,
        tls: bool = False,
        **knob_overrides,
    ) -> None:
        knobs = knobs or Knobs()
        if profile is not None:  # the profile's values, then explicit overrides on top
            knob_overrides = {**profile_knobs(profile), **knob_overrides}
        self.knobs = knobs.replace(**knob_overrides) if knob_overrides else knobs
        self.host = host
        self._requested_ports = (port, data_port, external_port)
        self._data_dir = data_dir
        self._owns_data_dir = data_dir is None
        self._store: Optional[Store] = None
        self._context: Optional[EmulatorContext] = None
        self._servers: Dict[str, EmulatorHTTPServer] = {}
        self._threads: Dict[str, threading.Thread] = {}
        self.endpoint = ""
        self.data_endpoint = ""
        #: base URL of the external web server that serves emulator-hosted external file handles
        self.external_endpoint = ""
        self._tls_wanted = tls
        self._tls: Optional[EmulatorTls] = None

    # --- lifecycle ----------------------------------------------------------------------------
    def __enter__(self) -> Emulator:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def data_dir(self) -> str:
        if self._data_dir is None:
            self._data_dir = tempfile.mkdtemp(prefix="synclient-emulator-")
        return self._data_dir

    def _open_store(self) -> EmulatorContext:
        if self._context is None:
            self._store = Store(self.data_dir)
            self._context = EmulatorContext(self._store, self.knobs)
            self.admin = Admin(self._store)
        return self._context

    def start(self) -> Emulator:
        if self._servers:
            return self
        context = self._open_store()
        context.stopping.clear()
        context.faults.started_at = time.monotonic()  # the maintenance window counts from here
        api_server, data_server, external_server = self._bind(context)
        api_server.routes = Routes(context)
        api_server.admin_routes = AdminRoutes(context, self.admin, self.info)
        self._servers = {"api": api_server, "data": data_server, "external": external_server}
        scheme = "https" if self._tls is not None else "http"
        self.endpoint = f"{scheme}://{self.host}:{api_server.server_address[1]}"
        self.data_endpoint = f"{scheme}://{self.host}:{data_server.server_address[1]}"
        self.external_endpoint = f"{scheme}://{self.host}:{external_server.server_address[1]}"
        # restart() must come back on the same ports
        self._requested_ports = tuple(server.server_address[1] for server in (api_server, data_server, external_server))
        context.api_endpoint = self.endpoint
        context.data_endpoint = self.data_endpoint
        context.external_endpoint = self.external_endpoint
        for name, server in self._servers.items():
            thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.1}, name=f"emulator-{name}", daemon=True
            )
            thread.start()
            self._threads[name] = thread
        return self

    def _bind(self, context: EmulatorContext):
        """The API, data and external servers on the requested ports; if one port is taken, none stays bound."""
        if self._tls_wanted and self._tls is None:
            self._tls = EmulatorTls(self.host)
        ssl_context = self._tls.server_context() if self._tls is not None else None
        bound = []
        try:
            for port, handler, listener in zip(
                self._requested_ports, (ApiHandler, DataHandler, ExternalHandler), ("api", "data", "external")
            ):
                bound.append(
                    EmulatorHTTPServer((self.host, port), handler, context, listener=listener, ssl_context=ssl_context)
                )
        except OSError:
            for server in bound:
                server.server_close()
            raise
        return bound

    def _stop_listeners(self) -> None:
        if self._context is not None:
            self._context.stopping.set()
        for server in self._servers.values():
            server.shutdown()
            server.server_close()
            server.close_connections()
        for thread in self._threads.values():
            thread.join(timeout=5)
        deadline = time.monotonic() + 5
        for server in self._servers.values():  # let handler threads notice their sockets are gone
            while server._connections and time.monotonic() < deadline:
                time.sleep(0.01)
        self._servers = {}
        self._threads = {}

    def stop(self) -> None:
        self._stop_listeners()
        if self._store is not None:
            self._store.close()
        self._store = None
        self._context = None
        if self._owns_data_dir and self._data_dir is not None:
            shutil.rmtree(self._data_dir, ignore_errors=True)
            self._data_dir = None
        if self._tls is not None:
            self._tls.close()
            self._tls = None

    def restart(self) -> None:
        """Stop the listeners and start again on the same ports with the same (persisted) store."""
        knobs = self._context.knobs if self._context else self.knobs
        stats = self._context.stats if self._context else None
        exchanges = self._context.exchanges if self._context else None
        self._stop_listeners()
        if self._store is not None:
            self._store.close()
        self._store = None
        self._context = None
        self.knobs = knobs
        context = self._open_store()  # a fresh store connection, as after a process restart...
        if stats is not None and exchanges is not None:  # (both or neither: they come from one context)
            context.stats = stats  # ...but tests keep one set of counters per Emulator object
            context.exchanges = exchanges
        self.start()

    # --- identity -----------------------------------------------------------------------------
    @property
    def token(self) -> str:
        return self._open_store().store.user.token

    @property
    def store(self) -> Store:
        return self._open_store().store

    @property
    def ca_bundle(self) -> Optional[str]:
        """The PEM file of the CA that signed the listeners' certificate (``tls=True``, once started), else None."""
        return self._tls.ca_bundle if self._tls is not None else None

    def info(self) -> Dict[str, Any]:
        projects = {name: f"syn{entity_id}" for name, entity_id in self.store.projects().items()}
        info: Dict[str, Any] = {
            "endpoint": self.endpoint,
            "data_endpoint": self.data_endpoint,
            "external_endpoint": self.external_endpoint,
            "token": self.token,
            "projects": projects,
        }
        if self.ca_bundle is not None:
            info["ca_bundle"] = self.ca_bundle
        return info

    # --- seeding ------------------------------------------------------------------------------
    def seed_spec(self, spec: dict) -> Dict[str, str]:
        return seeding.seed_spec(self.store, spec)

    def seed_dir(self, path: str, project_name: str = "p", *, names: str = "synapse") -> str:
        """A project mirroring a local directory; ``names="unchecked"``: local names Synapse would refuse kept (a
        hostile server's)."""
        return f"syn{seeding.seed_dir(self.store, path, project_name, NameRule.parse(names))}"

    def seed_synthetic(
        self,
        files: int = 400,
        depth: int = 3,
        fanout: int = 10,
        size: Union[str, int] = "50",
        seed: int = 0,
        project_name: Optional[str] = None,
    ) -> str:
        return f"syn{seeding.seed_synthetic(self.store, files, depth, fanout, size, seed, project_name)}"

    # --- observability and knobs -------------------------------------------------------------
    def stats(self) -> Dict[str, Any]:
        return self._open_store().stats.snapshot()

    def reset_stats(self) -> None:
        self._open_store().stats.reset()

    def exchanges(self, clear: bool = False) -> List[Exchange]:
        """The recorded platform exchanges, oldest first (knob ``record_exchanges``: how many are kept);
        ``clear=True`` empties the log after reading it."""
        log = self._open_store().exchanges
        kept = log.snapshot()
        if clear:
            log.clear()
        return kept

    def set_knobs(self, **changes) -> Knobs:
        self.knobs = self._open_store().set_knobs(**changes)
        return self.knobs

    # --- live mutations -----------------------------------------------------------------------
    def resolve(self, project_id: EntityRef, path: Union[str, Sequence[str]]) -> str:
        return self._admin().resolve(project_id, path)

    def add_version(self, entity_id: EntityRef, content: Content = b"", *, file_name: Optional[str] = None) -> int:
        """A new version; ``file_name``: its handle's fileName (default: the entity's name)."""
        return self._admin().add_version(entity_id, content, file_name=file_name)

    def replace_file_handle(self, entity_id: EntityRef, version: Optional[int] = None) -> int:
        """Synapse's in-place handle replacement (same bytes, no new version); the new handle's id."""
        return self._admin().replace_file_handle(entity_id, version)

    def delete_entity(self, entity_id: EntityRef) -> None:
        self._admin().delete_entity(entity_id)

    def rename_entity(self, entity_id: EntityRef, new_name: str, *, names: str = "synapse") -> None:
        """Synapse's rule for the new name; ``names="unchecked"``: any name (a hostile server's)."""
        self._admin().rename_entity(entity_id, new_name, names=names)

    def move_entity(self, entity_id: EntityRef, new_parent_id: EntityRef) -> None:
        self._admin().move_entity(entity_id, new_parent_id)

    def add_file(
        self,
        parent_id: EntityRef,
        name: str,
        content: Content = b"",
        *,
        file_name: Optional[str] = None,
        names: str = "synapse",
    ) -> str:
        """A new file; ``file_name``: its handle's fileName (default: ``name``); ``names="unchecked"``: a name
        Synapse would refuse (a hostile server's)."""
        return self._admin().add_file(parent_id, name, content, file_name=file_name, names=names)

    def add_external_file(
        self,
        parent_id: EntityRef,
        name: str,
        content: Content = b"",
        *,
        record_md5: bool = True,
        record_size: bool = True,
        file_name: Optional[str] = None,
        names: str = "synapse",
    ) -> str:
        """A file whose handle is an ExternalFileHandle served by the external listener; ``record_md5`` /
        ``record_size`` say whether the handle records contentMd5 / contentSize."""
        return self._admin().add_external_file(
            parent_id, name, content, record_md5=record_md5, record_size=record_size, file_name=file_name, names=names
        )

    def add_folder(self, parent_id: EntityRef, name: str, *, names: str = "synapse") -> str:
        return self._admin().add_folder(parent_id, name, names=names)

    def add_link(self, parent_id: EntityRef, name: str, target_id: EntityRef, *, names: str = "synapse") -> str:
        return self._admin().add_link(parent_id, name, target_id, names=names)

    def refresh_views(self, view_id: Optional[EntityRef] = None) -> List[str]:
        """New snapshots of one view or of all: what views answer while the ``view_lag`` knob is on."""
        return self._admin().refresh_views(view_id)

    def finish_view_builds(self) -> List[str]:
        """End the build of every view created through the API at once (knob ``view_build_seconds_per_1000_files``):
        their queries answer from the next GET on; the views that were building."""
        return self._open_store().view_builds.finish_all()

    def set_view_build_clock(self, clock: Callable[[], float]) -> None:
        """The clock view builds are timed on (default ``time.monotonic``): a test's fake clock makes a build end
        after a given number of readings."""
        self._open_store().view_builds.clock = clock

    def building_views(self) -> List[str]:
        """The views created through the API whose build has not ended."""
        return self._open_store().view_builds.pending()

    def trash(self) -> List[Dict[str, Any]]:
        """What the trash can holds: ``{"id", "name", "parentId", "kind", "deletedOn"}`` (its old name and parent)."""
        return self._admin().trash()

    def project_entities(self, project_id: EntityRef) -> List[Dict[str, Any]]:
        """Every entity of a project, those in the trash can too (``inTrash``), with their annotations."""
        return self._admin().project_entities(project_id)

    def set_annotation(self, entity_id: EntityRef, key: str, values: Optional[Sequence[Any]]) -> None:
        """Set (or with None / [] remove) one annotation of an entity; its etag changes."""
        self._admin().set_annotation(entity_id, key, values)

    def set_created_on(self, entity_id: EntityRef, stamp: str) -> None:
        """Date an entity's ``createdOn`` (``2024-01-02T03:04:05.000Z``)."""
        self._admin().set_created_on(entity_id, stamp)

    def set_deny(self, entity_id: EntityRef, deny: Union[bool, str]) -> None:
        from .store import DenyMode

        mode = (DenyMode.READ if deny else DenyMode.NONE) if isinstance(deny, bool) else DenyMode(deny)
        self.store.set_deny(parse_syn_id(entity_id), mode)

    def _admin(self) -> Admin:
        self._open_store()
        return self.admin
