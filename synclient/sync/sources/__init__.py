"""Where a run's files come from: a folder tree (``walker``), entity ids, datasets and collections (``by_id``, ids as
users write them in ``id_lists``) and SQL over a view or table (``queries``)."""
