"""A sync run sharded over a Dask cluster (dask.distributed): what its processes share."""
