"""A sync sharded over a Dask cluster: the driver plans, workers fetch, the driver indexes (docs/dask.md)."""
