"""The model test: a seeded random walk of remote changes and local interference against the emulator, each step
followed by a sync with random options and a check of every invariant (see model_support.py for the list).

Default (CI): fixed seeds, a bounded number of steps each, deterministic rules. Long mode: set
``SYNCLIENT_MODEL_STEPS`` (e.g. 5000) and optionally ``SYNCLIENT_MODEL_SEED`` (one seed or a comma-separated list;
a random seed, printed, when unset). ``SYNCLIENT_MODEL_KEEP_GOING=1`` collects the first violation of each invariant
instead of stopping at the first one. A failure prints the seed, the step, the rules so far and the invariant, and
the command line that replays it.

``view="auto"`` (issue 34): a quarter of the steps sync with a temporary view the sync makes itself (stale rows,
fallbacks, SIGKILLed CLI runs that leave theirs), drawn from a generator of its own; see model_support.py.

Over Dask (issue 19): ``test_random_walk_over_dask`` walks one seed with most syncs sharded over a LocalCluster of
two worker processes (see model_support.py for which); in long mode ``SYNCLIENT_MODEL_DASK=1`` runs every long walk
that way (one cluster per walk) and skips that default case.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
from pathlib import Path
from typing import Iterator

import pytest
from model_support import ModelWalk

import synclient
from synclient.emulator import Emulator

DEFAULT_SEEDS = (1, 2, 3, 4, 5)
DEFAULT_STEPS = 120
#: the default walks the README's test command runs; the others are in the slow tier (``pytest -m slow``, run by CI)
QUICK_TIER_SEEDS = (1,)
#: the default walk over Dask: one seed, fewer steps (a sharded sync costs a few scheduler round trips more)
DASK_SEED = 7
DASK_STEPS = 60


def _long_mode() -> bool:
    return any(os.environ.get(name, "").strip() for name in ("SYNCLIENT_MODEL_SEED", "SYNCLIENT_MODEL_STEPS"))


def _walks():
    seeds_env = os.environ.get("SYNCLIENT_MODEL_SEED", "").strip()
    steps_env = os.environ.get("SYNCLIENT_MODEL_STEPS", "").strip()
    if not _long_mode():
        return [
            pytest.param(seed, DEFAULT_STEPS, marks=() if seed in QUICK_TIER_SEEDS else pytest.mark.slow)
            for seed in DEFAULT_SEEDS
        ]
    steps = int(steps_env) if steps_env else DEFAULT_STEPS
    if seeds_env:
        seeds = [int(text) for text in seeds_env.split(",") if text.strip()]
    else:
        seeds = [random.SystemRandom().randrange(1, 2**31)]
    return [(seed, steps) for seed in seeds]


@contextlib.contextmanager
def _dask_client(scratch: Path) -> Iterator[object]:
    """A client of two worker processes (one thread each, as ``--dask local:2``), for one walk; its scratch space
    beside the walk's work folder (which must hold only the target and the sentinel)."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", local_directory=str(scratch)
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        # the workers must run this synclient (PYTHONPATH), not another install of it
        imported = set(client.run(lambda: synclient.__file__).values())
        assert imported == {synclient.__file__}, f"the Dask workers import {imported}, not {synclient.__file__}"
        yield client


def _walk(seed: int, steps: int, tmp_path: Path, *, dask: bool) -> None:
    keep_going = os.environ.get("SYNCLIENT_MODEL_KEEP_GOING") == "1"
    over = " over Dask" if dask else ""
    print(
        f"model walk{over}: seed {seed}, {steps} steps (replay: SYNCLIENT_MODEL_SEED={seed} "
        f"SYNCLIENT_MODEL_STEPS={steps}{' SYNCLIENT_MODEL_DASK=1' if dask else ''})"
    )
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(_dask_client(tmp_path / "dask-scratch")) if dask else None
        emu = stack.enter_context(Emulator())
        walk = ModelWalk(seed=seed, steps=steps, workdir=tmp_path, emu=emu, keep_going=keep_going, dask_client=client)
        try:
            stats = walk.run()
        finally:
            walk.close()
    print(f"model walk{over}: seed {seed} passed: {dict(stats)}")


@pytest.mark.parametrize("seed,steps", _walks(), ids=lambda value: str(value))
def test_random_walk_keeps_every_invariant(seed, steps, tmp_path, caplog):
    caplog.set_level(logging.ERROR, logger="synclient")  # per-file warnings of refused names would drown a failure
    _walk(seed, steps, tmp_path, dask=_long_mode() and os.environ.get("SYNCLIENT_MODEL_DASK") == "1")


@pytest.mark.slow
def test_random_walk_over_dask(tmp_path, caplog):
    if _long_mode():
        pytest.skip("long mode: SYNCLIENT_MODEL_DASK=1 runs the long walks over Dask")
    caplog.set_level(logging.ERROR, logger="synclient")
    _walk(DASK_SEED, DASK_STEPS, tmp_path, dask=True)
