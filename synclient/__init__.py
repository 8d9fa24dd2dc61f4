"""synclient: fast, safe mirroring of a Synapse-compatible data platform to local disk."""

__version__ = "0.1.0.dev0"
