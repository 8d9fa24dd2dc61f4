"""One library contender in its own process: ``python -m benchmarks.worker synclient|synapseclient|synclient-dropin``.

With ``--ids-file`` the job is a list of ids into one directory: synclient's ``download_many``, or synapseclient's
``syn.get(id, downloadLocation=...)`` for every id on a ``ThreadPoolExecutor`` of ``--workers`` threads. With
``--query SQL`` it is synclient's ``download_query``; ``--view`` plans synclient's sync from a file view;
``--download-list``: synclient's ``download_list`` (the user's download cart).

Times only the sync call (imports and, for synapseclient, login are outside the timed region) and reads the
emulator's counters around it; prints one JSON line. The parent measures CPU and peak RSS of this process.
"""

from __future__ import annotations

import argparse
import json
import logging
import ssl
import sys
import time
import urllib.request

#: the emulator's CA over HTTPS (``--ca-bundle``), for the admin calls around the timed region
_SSL = None


def _admin(endpoint: str, path: str, method: str = "GET") -> dict:
    request = urllib.request.Request(
        endpoint + "/emulator/" + path, data=b"" if method == "POST" else None, method=method
    )
    with urllib.request.urlopen(request, timeout=30, context=_SSL) as answer:
        text = answer.read()
    return json.loads(text) if text else {}


def _ids(args) -> list:
    with open(args.ids_file) as handle:
        return [line.strip() for line in handle if line.strip()]


def run_synclient(args) -> dict:
    from synclient import Platform, TransferConfig, download_list, download_many, download_query, sync_from_platform

    config = TransferConfig(**json.loads(args.config))
    ids = _ids(args) if args.ids_file else None
    with Platform(
        endpoint=args.endpoint, token=args.token, max_connections=config.max_workers, ca_bundle=args.ca_bundle
    ) as platform:
        _admin(args.endpoint, "stats/reset", "POST")
        started = time.perf_counter()
        # no synapseclient cache: every contender downloads every byte (and the emulator's handles stay out of it)
        if args.download_list:
            results = download_list(
                args.path, platform=platform, config=config, on_error="continue", synapse_cache=False
            )
        elif ids is not None:
            results = download_many(
                ids, args.path, platform=platform, config=config, on_error="continue", synapse_cache=False
            )
        elif args.query:
            results = download_query(
                args.query, args.path, platform=platform, config=config, on_error="continue", synapse_cache=False
            )
        else:
            results = sync_from_platform(
                args.entity,
                args.path,
                platform=platform,
                config=config,
                on_error="continue",
                synapse_cache=False,
                view=args.view,
            )
        wall = time.perf_counter() - started
    report = results.report
    client = {
        "rest_calls": report.rest_calls,
        "retries": report.retries,
        "throttled": report.throttled,
        "bytes_downloaded": report.bytes_downloaded,
        "downloaded": report.downloaded,
    }
    if getattr(report, "query", None) is not None:
        client["query_rows"] = report.query.rows
    return {"wall": wall, "failures": len(results.failures), "client": client}


def run_synapseclient(args) -> dict:
    """synapseutils.syncFromSynapse, or (``synclient-dropin``) synclient's drop-in of it: the same call, the same
    logged-in synapseclient, the only change the import."""
    import synapseclient

    if args.ids_file and args.kind != "synapseclient":
        raise SystemExit(f"{args.kind} has no download-by-ids form")
    if args.kind == "synclient-dropin":
        from synclient import syncFromSynapse
    else:
        from synapseutils import syncFromSynapse

    logging.disable(logging.WARNING)
    syn = synapseclient.Synapse(
        repoEndpoint=args.endpoint + "/repo/v1",
        authEndpoint=args.endpoint + "/auth/v1",
        fileHandleEndpoint=args.endpoint + "/file/v1",
        portalEndpoint=args.endpoint + "/",
        skip_checks=True,
        cache_root_dir=args.cache_dir,
        silent=True,
    )
    syn.login(authToken=args.token)
    if args.ids_file:
        return _synapseclient_ids(syn, args)
    _admin(args.endpoint, "stats/reset", "POST")
    started = time.perf_counter()
    syncFromSynapse(syn, args.entity, path=args.path)
    wall = time.perf_counter() - started
    return {"wall": wall, "failures": 0, "client": {}}


def _synapseclient_ids(syn, args) -> dict:
    """synapseclient's way to many ids: ``syn.get(id, downloadLocation=DIR)`` per id on a thread pool (each call
    resolves, downloads and checks one file). The first failure fails the run, as syncFromSynapse's would."""
    import os
    import warnings
    from concurrent.futures import ThreadPoolExecutor

    warnings.simplefilter("ignore")  # syn.get is deprecated in 4.11 in favour of synapseclient.operations.get
    ids = _ids(args)
    os.makedirs(args.path, exist_ok=True)
    _admin(args.endpoint, "stats/reset", "POST")
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for _entity in pool.map(lambda entity_id: syn.get(entity_id, downloadLocation=args.path), ids):
            pass
    wall = time.perf_counter() - started
    return {"wall": wall, "failures": 0, "client": {"workers": args.workers}}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.worker")
    parser.add_argument("kind", choices=["synclient", "synapseclient", "synclient-dropin"])
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--entity", required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--config", default="{}", help="TransferConfig fields as JSON")
    parser.add_argument("--cache-dir", help="synapseclient cache root")
    parser.add_argument("--ids-file", help="download these ids (one a line) into --path instead of syncing --entity")
    parser.add_argument("--query", help="download what this SQL over a file view selects (download_query)")
    parser.add_argument("--view", help="plan the sync from this file view (sync_from_platform(view=...))")
    parser.add_argument("--download-list", action="store_true", help="download the user's download cart (S10)")
    parser.add_argument("--workers", type=int, default=8, help="synapseclient's thread pool for --ids-file")
    parser.add_argument(
        "--ca-bundle",
        help="the emulator's CA over HTTPS (synclient: Platform(ca_bundle=); "
        "synapseclient reads REQUESTS_CA_BUNDLE/SSL_CERT_FILE, set by the harness)",
    )
    args = parser.parse_args()
    global _SSL
    if args.ca_bundle:
        _SSL = ssl.create_default_context(cafile=args.ca_bundle)
    result = run_synclient(args) if args.kind == "synclient" else run_synapseclient(args)
    result["stats"] = _admin(args.endpoint, "stats")
    from benchmarks.harness import vm_hwm_mb

    result["peak_rss_mb"] = vm_hwm_mb()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
