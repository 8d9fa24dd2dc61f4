"""How each contender is launched. Every contender is a separate process so that its CPU time and peak RSS
can be read from ``wait4`` without mixing in the harness or the emulator."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

#: display order
ORDER = (
    "synclient",
    "synclient-view",
    "synclient-auto",
    "synclient-id",
    "synclient-cli",
    "synclient-cli-auto",
    "synclient-dropin",
    "synclient-w1",
    "synapseclient",
    "aria2c",
    "curl",
)
#: contenders that run only when --contenders names them
ON_REQUEST = ("synclient-dropin",)
#: issue 34: contenders that make, read and delete a temporary file view in the user's account (``--view auto``);
#: the harness checks after each of their runs that nothing was left behind
AUTO_CONTENDERS = ("synclient-auto", "synclient-cli-auto")
DESCRIPTIONS = {
    "synclient": "synclient library, default TransferConfig (S7: download_many(ids, DIR); S10: download_list(DIR))",
    "synclient-cli": '`synclient get -r` (S7: `get --from-file`; S8: `get --query "SELECT * ..."`; S10: '
    "`get --download-list`; CLI process: "
    "includes interpreter start-up and imports)",
    "synclient-view": "synclient library, sync_from_platform(project, DIR, view=VIEW): planned from the file view (S9)",
    "synclient-auto": 'synclient library, sync_from_platform(project, DIR, view="auto"): planned from a temporary '
    "file view synclient makes, reads and deletes (S11)",
    "synclient-cli-auto": "`synclient get -r ID --view auto` (S11; CLI process: includes interpreter start-up and "
    "imports)",
    "synclient-id": 'synclient library, download_query("SELECT id FROM VIEW WHERE ...", DIR): no file columns in the '
    "rows, one bundle call per file (S8)",
    "synclient-dropin": "`synclient.syncFromSynapse(syn, ...)`: synapseutils' call, a logged-in synapseclient handed "
    "over, fresh cache dir (only when asked for with --contenders)",
    "synclient-w1": "synclient library, max_workers=1 (serial baseline)",
    "synapseclient": "synapseclient 4.14.0 synapseutils.syncFromSynapse, fresh cache dir (S7: syn.get(id, "
    "downloadLocation=DIR) for every id on a ThreadPoolExecutor of 8, fresh cache dir; S8: the "
    'official CLI, `synapse get -q "SELECT id ..." --downloadLocation DIR`, fresh cache dir; S10: the official '
    "CLI, `synapse get-download-list --downloadLocation DIR`, fresh cache dir)",
    "aria2c": "aria2c -x16 -s16 (-j 32 for many files) on pre-fetched pre-signed URLs",
    "curl": "curl, one stream, files in sequence, on pre-fetched pre-signed URLs",
}


@dataclass
class Launch:
    argv: List[str]
    kind: str  # "worker" (prints a JSON line, times itself) or "process" (timed by the harness)
    env: Dict[str, str] = field(default_factory=dict)  # set over the harness's environment


#: issue 18: the variables that name a CA bundle to requests (synapseclient, synclient), httpx and OpenSSL
#: (synapseclient's async half) and curl; over HTTPS each is set to the emulator's CA for every contender, so no
#: contender falls back to the machine's bundle (which this machine's environment names in all three)
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE")


def with_ca(plan: Launch, name: str, ca_bundle: Optional[str]) -> Launch:
    """``plan`` given the CA over HTTPS: the environment variables for every contender, and each tool's own flag
    (synclient: ``--ca-bundle``; aria2c: ``--ca-certificate``; curl: ``--cacert``). Plain HTTP: unchanged."""
    if not ca_bundle:
        return plan
    argv = list(plan.argv)
    if plan.kind == "worker":
        argv += ["--ca-bundle", ca_bundle]  # synclient's Platform(ca_bundle=) and the worker's admin calls
    elif name.startswith("synclient"):
        at = argv.index("-m") + 2  # a global option: right after `python -m synclient`
        argv[at:at] = ["--ca-bundle", ca_bundle]
    elif name == "aria2c":
        argv.append(f"--ca-certificate={ca_bundle}")
    elif name == "curl":
        argv[1:1] = ["--cacert", ca_bundle]
    return Launch(argv, plan.kind, {**plan.env, **{variable: ca_bundle for variable in CA_VARIABLES}})


def missing_tool(name: str) -> Optional[str]:
    tool = {"aria2c": "aria2c", "curl": "curl"}.get(name)
    if tool and shutil.which(tool) is None:
        return f"skipped: {tool} not installed"
    if name in ("synapseclient", "synclient-dropin"):
        try:
            import synapseutils  # noqa: F401
        except ImportError:
            return "skipped: synapseclient not installed"
    return None


#: S8: the columns each contender's query selects (SELECT * carries the view's file columns: no bundle per file)
QUERY_COLUMNS = {"synclient": "*", "synclient-cli": "*", "synclient-id": "id", "synapseclient": "id"}


def query_for(name: str, view_id: str, where: str) -> str:
    return f"SELECT {QUERY_COLUMNS[name]} FROM {view_id} WHERE {where}"


#: threads of the synapseclient contender's ``syn.get`` loop on a list of ids (its own max_threads is 6 on 2 cores)
SYNAPSECLIENT_ID_WORKERS = 8


def launch(
    name: str,
    *,
    endpoint: str,
    token: str,
    entity: str,
    out: Path,
    cache_dir: Path,
    urls: Sequence[Tuple[str, str]],
    config: Optional[Dict[str, object]] = None,
    ids_file: Optional[Path] = None,
    view_id: str = "",
    where: str = "",
    ca_bundle: Optional[str] = None,
    cart: bool = False,
) -> Launch:
    """``urls``: (relative path, pre-signed URL) for the data-plane tools. ``ids_file``: one entity id a line; when
    given, the job is "download these ids into ``out``" (download_many, ``get --from-file``, a ``syn.get`` loop)
    instead of syncing ``entity``. ``where``: the job is "download what ``SELECT ... FROM view_id WHERE where``
    selects into ``out``"; without it, ``view_id`` is the file view ``synclient-view`` plans its sync from.
    ``ca_bundle``: the emulator serves HTTPS and every contender trusts this CA (see :func:`with_ca`). ``cart``: the
    job is "download the user's download cart into ``out``" (S10)."""
    if cart:
        return with_ca(
            _cart_launch(name, endpoint=endpoint, token=token, out=out, cache_dir=cache_dir, config=config),
            name,
            ca_bundle,
        )
    return with_ca(
        _launch(
            name,
            endpoint=endpoint,
            token=token,
            entity=entity,
            out=out,
            cache_dir=cache_dir,
            urls=urls,
            config=config,
            ids_file=ids_file,
            view_id=view_id,
            where=where,
        ),
        name,
        ca_bundle,
    )


def _launch(
    name: str,
    *,
    endpoint: str,
    token: str,
    entity: str,
    out: Path,
    cache_dir: Path,
    urls: Sequence[Tuple[str, str]],
    config: Optional[Dict[str, object]],
    ids_file: Optional[Path],
    view_id: str,
    where: str,
) -> Launch:
    worker = [sys.executable, "-m", "benchmarks.worker"]
    common = ["--endpoint", endpoint, "--token", token, "--entity", entity, "--path", str(out)]
    if where:
        return _query_launch(
            name,
            worker,
            common,
            endpoint=endpoint,
            token=token,
            out=out,
            cache_dir=cache_dir,
            sql=query_for(name, view_id, where),
            config=config,
        )
    if name in ("synclient-view", "synclient-auto"):
        view = view_id if name == "synclient-view" else "auto"
        return Launch(
            worker + ["synclient"] + common + ["--config", json.dumps(config or {}), "--view", view], "worker"
        )
    if ids_file is not None:
        if name not in ("synclient", "synclient-cli", "synapseclient"):
            raise ValueError(f"contender {name!r} has no download-by-ids form")
        common += ["--ids-file", str(ids_file)]
        if name == "synclient-cli":
            return Launch(
                [
                    sys.executable,
                    "-m",
                    "synclient",
                    "--endpoint",
                    endpoint,
                    "--token",
                    token,
                    "--json",
                    "get",
                    "--from-file",
                    str(ids_file),
                    "--path",
                    str(out),
                    "--no-progress",
                    "--no-synapse-cache",
                ],
                "process",
            )
        if name == "synapseclient":
            common += ["--workers", str(SYNAPSECLIENT_ID_WORKERS)]
    if name == "synclient":
        return Launch(worker + ["synclient"] + common + ["--config", json.dumps(config or {})], "worker")
    if name == "synclient-w1":
        return Launch(
            worker + ["synclient"] + common + ["--config", json.dumps({**(config or {}), "max_workers": 1})], "worker"
        )
    if name in ("synapseclient", "synclient-dropin"):
        return Launch(worker + [name] + common + ["--cache-dir", str(cache_dir)], "worker")
    if name in ("synclient-cli", "synclient-cli-auto"):
        return Launch(
            [
                sys.executable,
                "-m",
                "synclient",
                "--endpoint",
                endpoint,
                "--token",
                token,
                "--json",
                "get",
                "-r",
                entity,
                "--path",
                str(out),
                "--no-progress",
                "--no-synapse-cache",
            ]
            + (["--view", "auto"] if name == "synclient-cli-auto" else []),
            "process",
        )
    list_file = out.parent / (out.name + f".{name}.list")
    out.mkdir(parents=True, exist_ok=True)
    if name == "aria2c":
        list_file.write_text("".join(f"{url}\n  out={path}\n" for path, url in urls))
        argv = [
            "aria2c",
            "-x16",
            "-s16",
            "-j32",
            "-d",
            str(out),
            "-i",
            str(list_file),
            "--file-allocation=falloc",
            "--allow-overwrite=true",
            "--auto-file-renaming=false",
            "--summary-interval=0",
            "--console-log-level=error",
            "-q",
        ]
        return Launch(argv, "process")
    if name == "curl":
        list_file.write_text("".join(f'url = "{url}"\noutput = "{out / path}"\n' for path, url in urls))
        return Launch(["curl", "-sSf", "--create-dirs", "-K", str(list_file)], "process")
    raise ValueError(f"unknown contender {name!r}")


def _synapse_config(endpoint: str, cache_dir: Path, out: Path) -> Path:
    """A synapseclient config file: the emulator's endpoints and a fresh cache dir (the official CLI reads it)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    config_file = cache_dir / "synapseConfig"
    config_file.write_text(
        f"[endpoints]\nrepoEndpoint = {endpoint}/repo/v1\nauthEndpoint = {endpoint}/auth/v1\n"
        f"fileHandleEndpoint = {endpoint}/file/v1\nportalEndpoint = {endpoint}/\n"
        f"[cache]\nlocation = {cache_dir / 'cache'}\n"
    )
    return config_file


def _cart_launch(
    name: str, *, endpoint: str, token: str, out: Path, cache_dir: Path, config: Optional[Dict[str, object]]
) -> Launch:
    """S10: the user's download cart into ``out``."""
    if name == "synclient":
        worker = [sys.executable, "-m", "benchmarks.worker", "synclient"]
        common = ["--endpoint", endpoint, "--token", token, "--entity", "cart", "--path", str(out)]
        return Launch(worker + common + ["--config", json.dumps(config or {}), "--download-list"], "worker")
    if name == "synclient-cli":
        argv = [sys.executable, "-m", "synclient", "--endpoint", endpoint, "--token", token, "--json", "get"]
        return Launch(argv + ["--download-list", "--path", str(out), "--no-progress", "--no-synapse-cache"], "process")
    if name == "synapseclient":
        config_file = _synapse_config(endpoint, cache_dir, out)
        argv = [sys.executable, "-m", "synapseclient", "-c", str(config_file), "--skip-checks", "-p", token]
        return Launch(argv + ["get-download-list", "--downloadLocation", str(out)], "process")
    raise ValueError(f"contender {name!r} has no download-cart form")


def _query_launch(
    name: str,
    worker: List[str],
    common: List[str],
    *,
    endpoint: str,
    token: str,
    out: Path,
    cache_dir: Path,
    sql: str,
    config: Optional[Dict[str, object]],
) -> Launch:
    if name in ("synclient", "synclient-id"):
        return Launch(
            worker + ["synclient"] + common + ["--config", json.dumps(config or {}), "--query", sql], "worker"
        )
    if name == "synclient-cli":
        return Launch(
            [
                sys.executable,
                "-m",
                "synclient",
                "--endpoint",
                endpoint,
                "--token",
                token,
                "--json",
                "get",
                "--query",
                sql,
                "--path",
                str(out),
                "--no-progress",
                "--no-synapse-cache",
            ],
            "process",
        )
    if name == "synapseclient":
        # the official CLI as users run it: endpoints (and a fresh cache) from a config file, its own query polling
        cache_dir.mkdir(parents=True, exist_ok=True)
        out.mkdir(parents=True, exist_ok=True)
        config_file = cache_dir / "synapseConfig"
        config_file.write_text(
            f"[endpoints]\nrepoEndpoint = {endpoint}/repo/v1\nauthEndpoint = {endpoint}/auth/v1\n"
            f"fileHandleEndpoint = {endpoint}/file/v1\nportalEndpoint = {endpoint}/\n"
            f"[cache]\nlocation = {cache_dir / 'cache'}\n"
        )
        return Launch(
            [
                sys.executable,
                "-m",
                "synapseclient",
                "-c",
                str(config_file),
                "--skip-checks",
                "-p",
                token,
                "get",
                "-q",
                sql,
                "--downloadLocation",
                str(out),
            ],
            "process",
        )
    raise ValueError(f"contender {name!r} has no query form")
