"""The model test: a seeded random walk of remote changes and local interference against the emulator, each step
followed by a sync with random options and a check of every invariant (see model_support.py for the list).

Default (CI): fixed seeds, a bounded number of steps each, deterministic rules. Long mode: set
``SYNCLIENT_MODEL_STEPS`` (e.g. 5000) and optionally ``SYNCLIENT_MODEL_SEED`` (one seed or a comma-separated list;
a random seed, printed, when unset). ``SYNCLIENT_MODEL_KEEP_GOING=1`` collects the first violation of each invariant
instead of stopping at the first one. A failure prints the seed, the step, the rules so far and the invariant, and
the command line that replays it.
"""
from __future__ import annotations

import logging
import os
import random

import pytest

from model_support import ModelWalk
from synclient.emulator import Emulator

DEFAULT_SEEDS = (1, 2, 3, 4, 5)
DEFAULT_STEPS = 120


def _walks():
    seeds_env = os.environ.get("SYNCLIENT_MODEL_SEED", "").strip()
    steps_env = os.environ.get("SYNCLIENT_MODEL_STEPS", "").strip()
    if not seeds_env and not steps_env:
        return [(seed, DEFAULT_STEPS) for seed in DEFAULT_SEEDS]
    steps = int(steps_env) if steps_env else DEFAULT_STEPS
    if seeds_env:
        seeds = [int(text) for text in seeds_env.split(",") if text.strip()]
    else:
        seeds = [random.SystemRandom().randrange(1, 2 ** 31)]
    return [(seed, steps) for seed in seeds]


@pytest.mark.parametrize("seed,steps", _walks(), ids=lambda value: str(value))
def test_random_walk_keeps_every_invariant(seed, steps, tmp_path, caplog):
    caplog.set_level(logging.ERROR, logger="synclient")  # per-file warnings of refused names would drown a failure
    keep_going = os.environ.get("SYNCLIENT_MODEL_KEEP_GOING") == "1"
    print(f"model walk: seed {seed}, {steps} steps (replay: SYNCLIENT_MODEL_SEED={seed} "
          f"SYNCLIENT_MODEL_STEPS={steps})")
    with Emulator() as emu:
        walk = ModelWalk(seed=seed, steps=steps, workdir=tmp_path, emu=emu, keep_going=keep_going)
        try:
            stats = walk.run()
        finally:
            walk.close()
    print(f"model walk: seed {seed} passed: {dict(stats)}")
