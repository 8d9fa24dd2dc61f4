"""The sync engine. The run's own modules sit here: ``options`` (the request), ``runner`` (one run, start to end),
``pipeline`` (one file's journey), ``claims`` (the local path each file gets), ``effects`` (where decisions go:
carried out, or planned), ``manifest_assembly``, ``deletion`` and ``leftovers`` (what a run leaves and removes). Its
parts are packages below: ``sources`` (where files come from), ``plan`` (deciding), ``records`` (index, manifests),
``local`` (the disk)."""
