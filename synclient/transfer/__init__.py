"""The data plane: the shared task pool, pre-signed URL batching, and the download strategies."""
