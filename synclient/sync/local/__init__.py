"""The local disk, safely: remote names to local paths (``name_gate``, ``paths``, ``local_names``), folders reached
without following symlinks (``folders``)."""
