"""Issue 34, review of ``--view auto`` against the emulator: a write the platform applied but whose answer was lost
(a 5xx from a proxy, a cut connection: the call is tried again), and a run stopped between the steps of making its
view. Each time the run must still use the view, or walk, and leave nothing behind in the user's account."""

from __future__ import annotations

import json
from typing import Callable, Optional

import pytest
import requests
from synctrees import local_tree
from test_auto_view import FOLDERS, PER_FOLDER, SPEC, assert_nothing_left, bundles, sync

from synclient import Platform, sync_from_platform
from synclient.emulator import Emulator
from synclient.errors import SynclientError
from synclient.sync.sources import auto_view

VIEW = "org.sagebionetworks.repo.model.table.EntityView"


@pytest.fixture
def emu(tmp_path):
    with Emulator(data_dir=str(tmp_path / "emu")) as emu:
        emu.project = emu.seed_spec(SPEC)["p"]
        yield emu


class AfterTheCall:
    """A platform's session that lets every request reach the emulator and, for the first one ``matches``, does
    ``then`` once the emulator has applied it (``answered``: and answered with that status); and replaces its
    answer with a 503 (``lose_answer``)."""

    def __init__(
        self,
        platform: Platform,
        matches: Callable[[str, str, Optional[dict]], bool],
        *,
        lose_answer: bool = True,
        then: Callable[[], None] = lambda: None,
        answered: Optional[int] = None,
    ) -> None:
        self._request = platform._session.request
        self._matches = matches
        self._lose = lose_answer
        self._then = then
        self._answered = answered  # (only an answer of that status matches)
        self.done = False
        platform._session.request = self  # type: ignore[method-assign]

    def __call__(self, method, url, **keywords):
        response = self._request(method, url, **keywords)
        body = json.loads(keywords["data"]) if keywords.get("data") else None
        if self.done or not self._matches(method, url, body):
            return response
        if self._answered is not None and response.status_code != self._answered:
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


def creates_the_project(method, url, body) -> bool:
    return method == "POST" and url.endswith("/entity") and (body or {}).get("concreteType", "").endswith("Project")


class DeletesTheProject:
    """The second DELETE of a run: its scratch project's, after its view's."""

    __name__ = "deletes_the_project"

    def __init__(self) -> None:
        self.deletes = 0

    def __call__(self, method, url, body) -> bool:
        self.deletes += method == "DELETE"
        return self.deletes == 2


def sync_through(emu, target, wrap, **keywords):
    with Platform(emu.endpoint, token=emu.token) as platform:
        fault = wrap(platform)
        results = sync_from_platform(
            emu.project, target, platform=platform, synapse_cache=False, view="auto", **keywords
        )
        assert fault.done
        return results


@pytest.mark.parametrize(
    "step",
    [creates_the_project, creates_the_view, annotates, DeletesTheProject()],
    ids=["POST the project", "POST the view", "PUT its annotations", "DELETE the project"],
)
def test_a_write_applied_whose_answer_was_lost_still_gives_the_view_and_leaves_nothing(emu, tmp_path, step, caplog):
    caplog.set_level("INFO", logger="synclient.sync.auto_view")
    plain = sync(emu, tmp_path / "plain")
    emu.reset_stats()
    auto = sync_through(emu, tmp_path / "auto", lambda platform: AfterTheCall(platform, step))
    assert local_tree(tmp_path / "plain") == local_tree(tmp_path / "auto") and not plain.failures
    assert not auto.failures and len(auto) == FOLDERS * PER_FOLDER
    assert bundles(emu) == auto_view.WORTH_A_VIEW - 1  # the view was used: the retry found it made, or marked
    assert_nothing_left(emu)  # no second view, no leftover
    assert not [r.getMessage() for r in caplog.records if "could not remove" in r.getMessage()]


def test_a_run_stopped_right_after_its_view_is_made_removes_it(emu, tmp_path):
    def stop_the_run(platform):
        stop = lambda: platform.cancel_event.set()  # noqa: E731 (the run's event, set in place of the platform's)
        return AfterTheCall(platform, creates_the_view, lose_answer=False, then=stop)

    try:
        sync_through(emu, tmp_path / "t", stop_the_run)
    except SynclientError:
        pass  # (stopped: how it says so is the runner's)
    assert_nothing_left(emu)  # the view made just before the stop is deleted, and the project with it


def test_a_scratch_project_removed_by_another_run_meanwhile_is_made_again(emu, tmp_path):
    """Two runs of one user: the other finished and removed the scratch project (empty then) after this run found
    it and before its view was made in it."""

    def the_other_run_removes_it(platform):
        def remove():
            (scratch,) = [i for name, i in emu.store.projects().items() if name.startswith("synclient-scratch-")]
            with Platform(emu.endpoint, token=emu.token) as other:
                other.delete_entity(scratch)

        def lists_the_scratch_project(method, url, body):
            return url.endswith("/entity/children") and (body or {}).get("includeTypes") == ["entityview"]

        return AfterTheCall(platform, lists_the_scratch_project, lose_answer=False, then=remove)

    plain = sync(emu, tmp_path / "plain")
    emu.reset_stats()
    auto = sync_through(emu, tmp_path / "auto", the_other_run_removes_it)
    assert local_tree(tmp_path / "plain") == local_tree(tmp_path / "auto") and not plain.failures
    assert not auto.failures and bundles(emu) == auto_view.WORTH_A_VIEW - 1
    assert_nothing_left(emu)


@pytest.mark.parametrize(
    "folder, keywords, why",
    [
        (None, {"dry_run": True}, "a dry run makes no view"),
        (None, {"provenance": True}, "every file takes its bundle call"),
        ("F0", {}, f"no view was made: {PER_FOLDER} files needed their bundle call"),
    ],
    ids=["dry run", "provenance", "small tree"],
)
def test_a_run_that_makes_no_view_says_why_on_the_notes_line(emu, tmp_path, caplog, folder, keywords, why):
    caplog.set_level("INFO", logger="synclient.sync.auto_view")  # (the logger the CLI shows as notes)
    root = emu.resolve(emu.project, folder) if folder else emu.project
    with Platform(emu.endpoint, token=emu.token) as platform:
        sync_from_platform(root, tmp_path / "t", platform=platform, synapse_cache=False, view="auto", **keywords)
    notes = [r.getMessage() for r in caplog.records if r.name == "synclient.sync.auto_view"]
    assert len(notes) == 1 and why in notes[0], notes
    assert_nothing_left(emu)


def test_a_run_stopped_once_its_view_is_read_removes_it_without_a_false_warning(emu, tmp_path, caplog):
    def stop_after_the_read(platform):
        def answered(method, url, body):
            return method == "GET" and "/table/query/async/get/" in url

        stop = lambda: platform.cancel_event.set()  # noqa: E731 (the run's event)
        return AfterTheCall(platform, answered, lose_answer=False, then=stop, answered=201)

    caplog.set_level("INFO", logger="synclient.sync.auto_view")
    try:
        sync_through(emu, tmp_path / "t", stop_after_the_read)
    except SynclientError:
        pass
    assert_nothing_left(emu)
    assert not [r.getMessage() for r in caplog.records if "could not remove" in r.getMessage()]


def test_a_scratch_project_removed_with_this_runs_new_view_in_it_is_made_again(emu, tmp_path):
    """The other run found the project empty, this run made its view in it, the other run removed the project (and
    the view with it): this run makes both again, once, instead of walking."""

    def the_other_run_removes_it(platform):
        def remove():
            (scratch,) = [i for name, i in emu.store.projects().items() if name.startswith("synclient-scratch-")]
            with Platform(emu.endpoint, token=emu.token) as other:
                other.delete_entity(scratch)

        return AfterTheCall(platform, annotates, lose_answer=False, then=remove)

    auto = sync_through(emu, tmp_path / "auto", the_other_run_removes_it)
    assert not auto.failures and bundles(emu) == auto_view.WORTH_A_VIEW - 1
    assert_nothing_left(emu)


def test_a_view_the_account_may_not_delete_is_said_once_and_the_run_succeeds(emu, tmp_path, caplog):
    """A --scratch-project where the user may create but not delete (Synapse's "Can edit"): the view stays, and the
    one note names it (the run's end does not try again and say it twice)."""
    scratch = emu.seed_spec({"projects": [{"name": "team scratch", "children": []}]})["team scratch"]
    caplog.set_level("INFO", logger="synclient.sync.auto_view")
    with Platform(emu.endpoint, token=emu.token) as platform:
        send = platform._session.request

        def refuse_deletes(method, url, **keywords):
            if method != "DELETE":
                return send(method, url, **keywords)
            refused = requests.Response()
            refused.status_code, refused.url = 403, url
            refused._content = b'{"reason": "You lack DELETE access to the requested entity."}'
            refused.headers["Content-Type"] = "application/json"
            return refused

        platform._session.request = refuse_deletes  # type: ignore[method-assign]
        auto = sync_from_platform(
            emu.project, tmp_path / "t", platform=platform, synapse_cache=False, view="auto", scratch_project=scratch
        )
    assert not auto.failures and len(auto) == FOLDERS * PER_FOLDER and bundles(emu) == auto_view.WORTH_A_VIEW - 1
    (left,) = [e["id"] for e in emu.project_entities(scratch) if e["kind"] == "entityview"]
    said = [r.getMessage() for r in caplog.records if "could not remove" in r.getMessage()]
    assert len(said) == 1 and left in said[0] and "DELETE access" in said[0], said
