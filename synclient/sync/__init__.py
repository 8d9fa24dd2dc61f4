"""The sync engine: walk the remote tree, plan per entry, run the plan on the shared pool."""
