"""Issue 34, review of ``--view auto`` against the emulator: a write the platform applied but whose answer was lost
(a 5xx from a proxy, a cut connection: the call is tried again), and a run stopped between the steps of making its
view. Each time the run must still use the view, or walk, and leave nothing behind in the user's account."""

from __future__ import annotations

import json
from typing import Callable, Optional

import pytest
import requests
from synctrees import local_tree
from test_auto_view import FOLDERS, PER_FOLDER, assert_nothing_left, bundles, emu, sync  # noqa: F401 (fixture)

from synclient import Platform, sync_from_platform
from synclient.errors import SynclientError
from synclient.sync.sources import auto_view

VIEW = "org.sagebionetworks.repo.model.table.EntityView"


class AfterTheCall:
    """A platform's session that lets every request reach the emulator and, for the first one ``matches``, does
    ``then`` once the emulator has applied it: replace its answer with a 503 (``lose_answer``) or anything else."""

    def __init__(
        self,
        platform: Platform,
        matches: Callable[[str, str, Optional[dict]], bool],
        *,
        lose_answer: bool = True,
        then: Callable[[], None] = lambda: None,
    ) -> None:
        self._request = platform._session.request
        self._matches = matches
        self._lose = lose_answer
        self._then = then
        self.done = False
        platform._session.request = self  # type: ignore[method-assign]

    def __call__(self, method, url, **keywords):
        response = self._request(method, url, **keywords)
        body = json.loads(keywords["data"]) if keywords.get("data") else None
        if self.done or not self._matches(method, url, body):
            return response
        self.done = True
        self._then()
        if not self._lose:
            return response
        lost = requests.Response()
        lost.status_code, lost.url = 503, url
        lost._content = b'{"reason": "Service Unavailable (the answer was lost)"}'
        lost.headers["Content-Type"] = "application/json"
        return lost


def creates_the_view(method, url, body) -> bool:
    return method == "POST" and url.endswith("/entity") and (body or {}).get("concreteType") == VIEW


def annotates(method, url, body) -> bool:
    return method == "PUT" and url.endswith("/annotations2")


def sync_through(emu, target, wrap, **keywords):
    with Platform(emu.endpoint, token=emu.token) as platform:
        fault = wrap(platform)
        results = sync_from_platform(
            emu.project, target, platform=platform, synapse_cache=False, view="auto", **keywords
        )
        assert fault.done
        return results


@pytest.mark.parametrize("step", [creates_the_view, annotates], ids=["POST the view", "PUT its annotations"])
def test_a_write_applied_whose_answer_was_lost_still_gives_the_view_and_leaves_nothing(emu, tmp_path, step):
    plain = sync(emu, tmp_path / "plain")
    emu.reset_stats()
    auto = sync_through(emu, tmp_path / "auto", lambda platform: AfterTheCall(platform, step))
    assert local_tree(tmp_path / "plain") == local_tree(tmp_path / "auto") and not plain.failures
    assert not auto.failures and len(auto) == FOLDERS * PER_FOLDER
    assert bundles(emu) == auto_view.WORTH_A_VIEW - 1  # the view was used: the retry found it made, or marked
    assert_nothing_left(emu)  # no second view, no leftover


def test_a_run_stopped_right_after_its_view_is_made_removes_it(emu, tmp_path):
    def stop_the_run(platform):
        return AfterTheCall(platform, creates_the_view, lose_answer=False, then=lambda: platform.cancel_event.set())  # (the run's event)

    try:
        sync_through(emu, tmp_path / "t", stop_the_run)
    except SynclientError:
        pass  # (stopped: how it says so is the runner's)
    assert_nothing_left(emu)  # the view made just before the stop is deleted, and the project with it
