"""The shared runtime state of one running emulator: store, knobs, stats, faults, throttles."""

from __future__ import annotations

import threading

from .download_list import DownloadLists
from .faults import FaultPlan, ThrottleGate
from .knobs import Knobs
from .stats import ExchangeLog, Stats
from .store import Store
from .tables import AsyncJobs
from .view_builds import ViewBuilds


class EmulatorContext:
    """What both listeners' handler threads read; knobs are swapped whole, never mutated in place."""

    def __init__(self, store: Store, knobs: Knobs) -> None:
        self.store = store
        self._knobs = knobs
        self._knobs_lock = threading.Lock()
        self.stats = Stats()
        #: the last ``knobs.record_exchanges`` platform exchanges (``Emulator.exchanges()``)
        self.exchanges = ExchangeLog()
        self.faults = FaultPlan(knobs.fault_seed)
        self.gate = ThrottleGate()
        #: base URL of the API listener (hostile redirects may point there); set once it is bound
        self.api_endpoint = ""
        #: base URL of the data listener (pre-signed URLs point there); set once it is bound
        self.data_endpoint = ""
        #: base URL of the external listener (emulator-served externalURLs point there); set once it is bound
        self.external_endpoint = ""
        #: set while stopping so stalled bodies give up at once
        self.stopping = threading.Event()
        #: the table query service's asynchronous jobs (kept in memory: a restart forgets them)
        self.jobs = AsyncJobs()
        #: every user's download list (in memory too)
        self.download_lists = DownloadLists()
        #: the views created through the API that are still building (in memory: a restart ends every build)
        self.view_builds = ViewBuilds()

    @property
    def knobs(self) -> Knobs:
        return self._knobs

    def set_knobs(self, **changes) -> Knobs:
        with self._knobs_lock:
            updated = self._knobs.replace(**changes)
            if updated.fault_seed != self._knobs.fault_seed:
                self.faults.reseed(updated.fault_seed)
            self._knobs = updated
        return updated
