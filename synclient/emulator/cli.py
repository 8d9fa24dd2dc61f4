"""``python -m synclient.emulator serve|seed``: run or fill an emulator from the shell.

Bad input gives one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import os
import shlex
import signal
import sys
import threading
from typing import Any, Dict, List, NoReturn, Optional

from .knobs import (
    HOSTILE_KINDS,
    PROFILES,
    Knobs,
    RateWindow,
    parse_kinds,
    parse_rate,
    parse_route_rates,
    parse_size,
    parse_window,
    profile_knobs,
)
from .seed import SpecError
from .server import Emulator

PROG = "python -m synclient.emulator"


class UsageError(Exception):
    """Bad command-line input: reported on one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line instead of usage + message
        raise UsageError(message)


def _positive_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise ValueError("must not be negative")
    return value


def _statuses(text: str) -> tuple:
    return tuple(int(part) for part in text.split(",") if part.strip())


# knob field -> (argparse type, help)
_KNOB_FLAGS = {
    "api_latency_ms": (_positive_float, "added to every API answer (ms)"),
    "api_latency_jitter_ms": (_positive_float, "uniform +/- jitter on the API latency (ms)"),
    "data_latency_ms": (_positive_float, "first-byte latency of the data host (ms)"),
    "bandwidth_per_conn": (parse_size, "bytes/s per data connection, e.g. 32MB; 0 = unlimited"),
    "max_concurrent_per_user": (int, "concurrent API requests per user before 429; 0 = off"),
    "max_requests_per_minute": (int, "API requests per user per rate window (60 s) before 429; 0 = off"),
    "rate_window_seconds": (_positive_float, "length of the rate window (s); shorter runs the same dynamics faster"),
    "rate_window_mode": (RateWindow, "sliding (default) or block: Synapse's fixed blocks from a user's first request"),
    "url_lifetime": (_positive_float, "pre-signed URL lifetime (s)"),
    "fault_api_5xx_rate": (parse_route_rates, "5xx probability: 0.05, or per class children=0.1,bundle=0.02"),
    "fault_api_5xx_statuses": (_statuses, "statuses used for injected 5xx, e.g. 503 or 500,502,503"),
    "fault_api_429_rate": (parse_rate, "probability of a random 429 (concurrency reason)"),
    "fault_data_cut_rate": (parse_rate, "probability that a data body is cut mid-stream"),
    "fault_data_stall_rate": (parse_rate, "probability that a data body stalls after the headers"),
    "fault_seed": (int, "seed of the fault decisions"),
    "maintenance_window": (parse_window, "START:SECONDS after startup answering 503 maintenance"),
    "throttle_retry_after": (int, "send Retry-After: N on 429s (real Synapse sends none)"),
    "stall_seconds": (_positive_float, "how long a stalled body stays silent"),
    "query_pending_polls": (int, "GETs of a table query job answered 202 before its result (default 1)"),
    "query_page_rows": (int, "rows per page of a table query (default 1000)"),
    "download_list_limit": (int, "files one user's download list may hold (default 100000, as Synapse)"),
    "record_exchanges": (int, "keep the last N API exchanges for GET /emulator/exchanges; 0 = off"),
    "max_containers_per_view": (int, "projects and folders (sub-folders included) a view's scope may hold (35000)"),
    "view_build_seconds_per_1000_files": (
        _positive_float,
        "build time of a view created through the API, per 1,000 files in its scope (s); queries answer 202 until",
    ),
    "fault_api_malformed_rate": (
        parse_route_rates,
        "probability of a truncated or non-JSON 2xx answer: 0.05, or per class",
    ),
    "fault_data_corrupt_rate": (parse_rate, "probability that a data body has one byte flipped"),
    "hostile_handle_rate": (parse_rate, "stable fraction of file handles that misdescribe their bytes"),
    "hostile_handle_mode": (str, "how those handles lie: md5, size+1 or size-1"),
    "hostile_rate": (parse_rate, "hostile-server mode: stable fraction of entities/handles/listings/objects mutated"),
    "hostile_kinds": (
        parse_kinds,
        "what hostile-server mode mutates: all (default), or a comma list of " + ",".join(HOSTILE_KINDS),
    ),
}
_KNOB_SWITCHES = {
    "data_ignore_range": "answer ranged GETs with 200 and the whole body",
    "data_wrong_content_range": "answer ranged GETs with a mismatching Content-Range",
    "view_lag": "views answer from their last snapshot (seeding, refresh), not the live store",
    "uncertified_user": "the user is not certified: it may create projects only (403 for folders and views)",
    "deny_create": "the user may create nothing: POST /entity answers 403 (lack of CREATE)",
}
# knobs that default to on, turned off by --no-... flags
_KNOB_NEGATIONS = {
    "external_ranges": "the external web server ignores Range: always 200, whole body, no Accept-Ranges",
    "external_content_length": "the external web server sends no Content-Length; the body ends at connection close",
}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def knob_arguments(knobs: Knobs) -> List[str]:
    """The ``serve`` flags that give ``knobs`` back (the inverse of :func:`knobs_from_args`): one flag per field
    that differs from its default. :class:`~synclient.emulator.process.EmulatorProcess` starts its child with them."""
    defaults = Knobs()
    arguments: List[str] = []
    for field in dataclasses.fields(Knobs):
        value = getattr(knobs, field.name)
        if value == getattr(defaults, field.name):
            continue
        if field.name in _KNOB_SWITCHES:
            arguments.append(_flag(field.name))  # a switch differs from its default (off) only when on
        elif field.name in _KNOB_NEGATIONS:
            arguments.append("--no-" + _flag(field.name)[2:])
        else:
            arguments += [_flag(field.name), _knob_text(field.name, value)]
    return arguments


def _knob_text(name: str, value: object) -> str:
    """A knob's value as its flag parses it back: the maintenance window ``START:SECONDS``, route rates
    ``children=0.1,bundle=0.02``, lists ``500,502`` (no hostile kind at all: ``none``), an enum its value."""
    if name == "maintenance_window":
        assert isinstance(value, tuple)
        return f"{value[0]}:{value[1]}"
    if isinstance(value, dict):
        return ",".join(f"{key}={rate}" for key, rate in value.items())
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, tuple):
        return ",".join(str(part) for part in value) or "none"
    return str(value)


def _checked(kind):
    """argparse swallows the message of a ValueError; keep it for the one-line error."""

    def convert(text: str):
        try:
            return kind(text)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(str(error) or f"invalid value {text!r}") from None

    convert.__name__ = getattr(kind, "__name__", "value")
    return convert


def _add_seed_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--seed-spec", metavar="FILE", help="JSON tree spec to seed")
    group.add_argument("--seed-dir", metavar="DIR", help="local directory tree to seed as a project")
    group.add_argument(
        "--synthetic",
        metavar="SPEC",
        help="files=400,depth=3,fanout=10,size=50 (size may be a mix: size=4KiB:500,1MiB:200)",
    )
    parser.add_argument("--project-name", default=None, help="project name for --seed-dir / --synthetic")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="A local Synapse-compatible platform emulator.")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    commands.required = True

    serve = commands.add_parser("serve", help="run the API, data and external listeners until SIGINT/SIGTERM")
    serve.add_argument("--data-dir", help="store directory (default: a temporary one, removed at exit)")
    serve.add_argument("--port", type=_checked(int), default=0, help="API port (0 = any free port)")
    serve.add_argument("--data-port", type=_checked(int), default=0, help="data port (0 = any free port)")
    serve.add_argument(
        "--external-port",
        type=_checked(int),
        default=0,
        help="port of the web server behind external file handles (0 = any free port)",
    )
    serve.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
    serve.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS on every listener, with a CA made at start (its PEM file: 'ca_bundle' in the "
        "JSON line); needs the 'trustme' package (the test extra)",
    )
    serve.add_argument(
        "--print-env",
        action="store_true",
        help="print shell exports of SYNCLIENT_ENDPOINT and SYNCLIENT_AUTH_TOKEN (and REQUESTS_CA_BUNDLE with "
        "--tls) instead of the JSON line, then serve: paste them into another terminal to point the synclient "
        "CLI at this emulator",
    )
    serve.add_argument("--profile", choices=sorted(PROFILES), help="preset knobs; explicit flags win")
    serve.add_argument(
        "--stop-at-stdin-eof",
        action="store_true",
        help="also stop when standard input closes: a launcher's pipe, so that the server never "
        "outlives the process that started it (synclient.emulator.process)",
    )
    _add_seed_options(serve)
    for name, (kind, text) in _KNOB_FLAGS.items():
        serve.add_argument(_flag(name), dest=name, type=_checked(kind), default=None, help=text)
    for name, text in _KNOB_SWITCHES.items():
        serve.add_argument(_flag(name), dest=name, action="store_true", default=None, help=text)
    for name, text in _KNOB_NEGATIONS.items():
        serve.add_argument("--no-" + _flag(name)[2:], dest=name, action="store_false", default=None, help=text)

    seed = commands.add_parser("seed", help="seed a data dir and print the created project ids")
    seed.add_argument("--data-dir", required=True, help="store directory to fill")
    _add_seed_options(seed)
    return parser


def parse_synthetic(text: str) -> Dict[str, Any]:
    """``files=400,depth=3,fanout=10,size=4KiB:500,1MiB:200`` -> keyword arguments."""
    options: Dict[str, str] = {}
    last_key: Optional[str] = None
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep:
            last_key = key.strip()
            options[last_key] = value.strip()
        elif last_key == "size":  # the mix continues: size=4KiB:500,1MiB:200
            options["size"] += "," + item.strip()
        else:
            raise UsageError(f"--synthetic: expected KEY=VALUE, got {item!r}")
    known = {"files": int, "depth": int, "fanout": int, "seed": int, "size": str}
    parsed: Dict[str, Any] = {}
    for key, value in options.items():
        if key not in known:
            raise UsageError(f"--synthetic: unknown key {key!r} (known: {', '.join(known)})")
        try:
            parsed[key] = known[key](value)
        except ValueError:
            raise UsageError(f"--synthetic: {key} must be a number, got {value!r}") from None
    return parsed


def knobs_from_args(args: argparse.Namespace) -> Knobs:
    values: Dict[str, Any] = profile_knobs(args.profile) if args.profile else {}
    for field in dataclasses.fields(Knobs):
        given = getattr(args, field.name, None)
        if given is not None:
            values[field.name] = given
    return Knobs(**values)


def _seed(emu: Emulator, args: argparse.Namespace) -> Dict[str, str]:
    if args.seed_spec:
        with open(args.seed_spec, encoding="utf-8") as handle:
            try:
                spec = json.load(handle)
            except ValueError as error:
                raise UsageError(f"{args.seed_spec}: not valid JSON: {error}") from None
        return emu.seed_spec(spec)
    if args.seed_dir:
        name = args.project_name or "p"
        return {name: emu.seed_dir(args.seed_dir, project_name=name)}
    if args.synthetic:
        options = parse_synthetic(args.synthetic)
        project_id = emu.seed_synthetic(project_name=args.project_name, **options)
        name = next(n for n, i in emu.info()["projects"].items() if i == project_id)
        return {name: project_id}
    return {}


def serve(args: argparse.Namespace) -> int:
    knobs = knobs_from_args(args)
    emu = Emulator(
        data_dir=args.data_dir,
        knobs=knobs,
        host=args.host,
        port=args.port,
        data_port=args.data_port,
        external_port=args.external_port,
        tls=args.tls,
    )
    stop = threading.Event()
    # Ctrl-C and SIGTERM stop the server; the process's own handlers come back when serve returns (a bad seed
    # raises here): main() is called in-process too, and a later Ctrl-C there must interrupt as usual
    previous = {signum: signal.signal(signum, lambda *_: stop.set()) for signum in (signal.SIGINT, signal.SIGTERM)}
    if args.stop_at_stdin_eof:
        threading.Thread(target=_stop_at_eof, args=(stop,), name="emulator-stdin", daemon=True).start()
    try:
        _seed(emu, args)
        emu.start()
        info = emu.info()
        print(shell_exports(info) if args.print_env else json.dumps(info), flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        emu.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


def shell_exports(info: Dict[str, Any]) -> str:
    """``serve --print-env``: the lines that point the synclient CLI of another terminal at this emulator (POSIX
    shell exports, each value quoted), then comments (the projects seeded, how to stop), so pasting all of it
    is harmless."""
    variables = {"SYNCLIENT_ENDPOINT": info["endpoint"], "SYNCLIENT_AUTH_TOKEN": info["token"]}
    if info.get("ca_bundle"):
        variables["REQUESTS_CA_BUNDLE"] = info["ca_bundle"]
    lines = [f"export {name}={shlex.quote(str(value))}" for name, value in variables.items()]
    projects = info.get("projects") or {}
    if projects:
        lines.append("# projects: " + ", ".join(f"{entity_id} ({name})" for name, entity_id in projects.items()))
    lines.append("# paste these lines into another terminal, then run synclient there; Ctrl-C here stops the emulator")
    if projects:
        lines.append(f"# e.g. synclient get -r {next(iter(projects.values()))} --path emulator-copy")
    return "\n".join(lines)


def _stop_at_eof(stop: threading.Event) -> None:
    """Read standard input to its end (the launcher never writes: the end comes when it closes the pipe or dies),
    then stop the server. Raw reads of the descriptor: a daemon thread blocked in ``sys.stdin``'s buffered reader
    holds its lock, and the interpreter aborts at exit when it cannot take it."""
    try:
        while os.read(sys.stdin.fileno(), 65536):
            pass
    except OSError:  # no usable stdin: nothing to watch
        return
    stop.set()


def seed(args: argparse.Namespace) -> int:
    emu = Emulator(data_dir=args.data_dir)
    try:
        created = _seed(emu, args)
        if not created:
            raise UsageError("nothing to seed: give --seed-spec, --seed-dir or --synthetic")
        print(json.dumps({"projects": created}), flush=True)
    finally:
        emu.stop()
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return serve(args) if args.command == "serve" else seed(args)
    except (UsageError, SpecError, ValueError, TypeError, KeyError, OSError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
