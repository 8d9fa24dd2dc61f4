"""A local, wire-compatible stand-in for a Synapse platform (API + S3-like data host).

    from synclient.emulator import Emulator
    with Emulator() as emu:
        ids = emu.seed_spec({"projects": [{"name": "p", "children": [...]}]})
        ...  # talk to emu.endpoint with emu.token

See docs/emulator.md.
"""

from __future__ import annotations

from .knobs import SYNAPSE_PROFILE, Knobs, parse_size
from .seed import SpecError, seeded_bytes, seeded_chunks
from .server import Emulator

__all__ = ["Emulator", "Knobs", "SYNAPSE_PROFILE", "SpecError", "parse_size", "seeded_bytes", "seeded_chunks"]
