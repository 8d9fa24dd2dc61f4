"""Deciding before doing: one action per remote file (``planner``), the name each file lands under
(``handle_names``), include/exclude patterns (``filters``) and a dry run's answer (``dry_run``)."""
