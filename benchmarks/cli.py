"""``python -m benchmarks run [SCENARIO ...] [--repeat N] [--quick]`` and ``python -m benchmarks sweep``."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform as platform_module
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

from benchmarks import harness, report
from benchmarks.contenders import ON_REQUEST, ORDER
from benchmarks.scenarios import TLS_SUFFIX, build, lookup, plain_of

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "benchmarks.md"
MiB = 1024 * 1024


def machine() -> Dict[str, object]:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = {}
    for tool, flag in (("aria2c", "--version"), ("curl", "--version")):
        try:
            versions[tool] = subprocess.run([tool, flag], capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            versions[tool] = "not installed"
    try:
        import synapseclient

        versions["synapseclient"] = synapseclient.__version__
    except ImportError:
        versions["synapseclient"] = "not installed"
    import synclient

    versions["synclient"] = synclient.__version__
    try:
        versions["synclient_commit"] = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "python": platform_module.python_version(),
        "kernel": platform_module.release(),
        "load_average_at_start": os.getloadavg(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "versions": versions,
    }


def _knobs_text(knobs: Dict[str, object], tls: bool = False) -> str:
    return " ".join([f"--{k.replace('_', '-')} {v}" for k, v in knobs.items()] + (["--tls"] if tls else []))


def _side_by_side(names: List[str]) -> List[List[str]]:
    """The named scenarios in run order, a scenario and its HTTPS variant (S5, S5h) grouped to run side by side."""
    groups: List[List[str]] = []
    for name in names:
        plain = plain_of(name)
        if plain in names:
            continue  # runs with its plain row
        groups.append([name] + ([name + TLS_SUFFIX] if name + TLS_SUFFIX in names else []))
    return groups


def _https_name(scenarios: dict, name: str) -> str:
    """The name of ``name``'s HTTPS variant (``name`` itself when it is one)."""
    scenario = lookup(scenarios, name)
    return name if scenario is not None and scenario.tls else name + TLS_SUFFIX


def emulator_knobs(pairs: List[str]) -> Dict[str, object]:
    """``NAME=VALUE`` pairs (``--emulator-knob``) as knob overrides: a VALUE that reads as JSON (a number, true)
    is that, else the text; a pair without ``=`` or an unknown knob is refused in one line."""
    from synclient.emulator.knobs import Knobs

    known = {f.name for f in dataclasses.fields(Knobs)}
    overrides: Dict[str, object] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or name not in known:
            raise ValueError(f"--emulator-knob {pair}: expected NAME=VALUE with NAME an emulator knob")
        try:
            overrides[name] = json.loads(text)
        except ValueError:
            overrides[name] = text
    return overrides


def cmd_run(args) -> int:
    scenarios = build(quick=args.quick)
    names = list(dict.fromkeys(args.scenarios or list(scenarios)))
    if args.tls:  # every named scenario also over HTTPS
        names = list(dict.fromkeys(n for name in names for n in (name, _https_name(scenarios, name))))
    unknown = [n for n in names if lookup(scenarios, n) is None]
    if unknown:
        print(
            f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(scenarios)} (and the HTTPS variant "
            f"of any: its name + {TLS_SUFFIX!r})",
            file=sys.stderr,
        )
        return 2
    scenarios = {name: lookup(scenarios, name) for name in names}
    try:
        overrides = emulator_knobs(args.emulator_knob or [])
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if overrides:  # e.g. issue 34's sensitivity to the view build time: the named scenarios with other knobs
        scenarios = {name: dataclasses.replace(s, knobs={**s.knobs, **overrides}) for name, s in scenarios.items()}
    contenders = args.contenders.split(",") if args.contenders else None
    work = Path(args.work or tempfile.mkdtemp(prefix="synclient-bench-work-"))
    repeat = args.repeat or (1 if args.quick else 3)
    results = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "quick": args.quick,
        "repeat": repeat,
        "machine": machine(),
        "scenarios": {},
    }
    failed = []
    suffix = "-quick" if args.quick else ""
    out = Path(args.out) if args.out else RESULTS / f"{datetime.date.today().isoformat()}{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    for group in _side_by_side(names):
        scenario = scenarios[group[0]]
        chosen = [c for c in scenario.contenders if contenders is None or c in contenders]
        # contenders run only when named: where synclient runs, so can its drop-in
        chosen += [
            c
            for c in ON_REQUEST
            if contenders and c in contenders and "synclient" in scenario.contenders and scenario.job == "sync"
        ]  # the drop-in is syncFromSynapse's: it has no list-of-ids form
        print(
            f"{' + '.join(group)}: {scenario.title} ({len(scenario.files)} files, "
            f"{scenario.total_bytes / 1e6:,.1f} MB)"
            + (", plain and over HTTPS, side by side" if len(group) > 1 else ""),
            flush=True,
        )
        by_name = harness.run_side_by_side(
            [scenarios[name] for name in group],
            work,
            chosen,
            repeat,
            log=lambda text: print(text, flush=True),
            max_slow_repeats=None if args.quick else args.slow_after,
        )
        for name in group:
            variant = scenarios[name]
            dicts = harness.as_dicts(by_name[name])
            failed += [
                f"{name}/{r['contender']}: {r['status']}"
                for r in dicts
                if not r["ok"] and not r["status"].startswith("skipped")
            ]
            results["scenarios"][name] = {
                "title": variant.title,
                "files": len(variant.files),
                "bytes": variant.total_bytes,
                "knobs": variant.knobs,
                "knobs_text": _knobs_text(variant.knobs, variant.tls),
                "tls": variant.tls,
                "bound": report.latency_bound(variant),
                "runs": dicts,
                "summary": report.summarize(variant, dicts),
            }
        results["load_average_at_end"] = os.getloadavg()
        out.write_text(json.dumps(results, indent=1))  # after every scenario: a long run keeps what it measured
    _publish(results, out, args.write_docs)
    if failed:
        print("NOT byte-exact:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


def _publish(results: dict, out: Path, write_docs: bool) -> None:
    table = report.markdown(results)
    print(table)
    if any(entry.get("tls") for entry in results["scenarios"].values()):
        print(report.tls_markdown(results))
    print(f"results: {out}")
    if write_docs:
        pngs = report.plots(results, RESULTS)
        m = results["machine"]
        described = (
            f"Machine: {m['cpus']} vCPU ({m['cpu']}), {m['memory_gib']} GiB RAM, Python {m['python']}, "
            f"Linux {m['kernel']}; {', '.join(f'{k} {v}' for k, v in m['versions'].items())}. "
            f"1-minute load average {m['load_average_at_start'][0]:.1f} at the start"
            + (f" and {results['load_average_at_end'][0]:.1f} at the end" if "load_average_at_end" in results else "")
            + " (shared machine). "
            f"Run of {results['date']}, {results['repeat']} repeats."
            + (f" {results['notes']}" if results.get("notes") else "")
            + "\n\n"
        )
        _write_doc_block(
            "results",
            described
            + table
            + "".join(f"\n![{p.stem}](../benchmarks/results/{p.name})\n" for p in pngs)
            + f"\nRaw figures: [`benchmarks/results/{out.name}`](../benchmarks/results/{out.name}).\n",
        )


def cmd_report(args) -> int:
    """Re-render the table (and with --write-docs the docs block and plots) from a results JSON."""
    out = Path(args.results)
    results = json.loads(out.read_text())
    scenarios = build(quick=results.get("quick", False))
    for name, entry in results["scenarios"].items():
        entry["summary"] = report.summarize(lookup(scenarios, name), entry["runs"])
        entry["bound"] = report.latency_bound(lookup(scenarios, name))
    out.write_text(json.dumps(results, indent=1))
    _publish(results, out, args.write_docs)
    return 0


def _write_doc_block(block: str, text: str) -> None:
    content = DOC.read_text(encoding="utf-8")
    start, end = f"<!-- {block}:start -->", f"<!-- {block}:end -->"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    if not pattern.search(content):
        raise SystemExit(f"{DOC} has no {start} ... {end} block")
    DOC.write_text(pattern.sub(lambda _m: f"{start}\n{text}{end}", content), encoding="utf-8")


#: (scenario, knob, values) of the defaults sweep; the other knobs stay at their defaults
SWEEP = [
    ("S1", "max_workers", [16, 32, 64, 96]),
    ("S2", "multipart_threshold", [8 * MiB, 32 * MiB, 128 * MiB]),
    ("S3", "streams_per_file", [4, 8, 16, 32]),
    ("S3", "part_size", [8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB]),
    ("S5", "streams_per_file", [4, 8, 16, 32]),
    ("S1", "url_batch_size", [10, 25, 50, 100]),
    ("S2", "url_batch_size", [10, 25, 50, 100]),
    ("S2", "direct_io", [False, True]),
    ("S3", "direct_io", [False, True]),
    ("S5", "direct_io", [False, True]),
]


def _config_for(knob: str, value: int) -> Dict[str, int]:
    from synclient import TransferConfig

    config = {knob: value}
    defaults = TransferConfig()
    if knob == "part_size" and value > defaults.multipart_threshold:
        config["multipart_threshold"] = value
    if knob == "multipart_threshold" and value < defaults.part_size:
        config["part_size"] = value
    return config


def cmd_sweep(args) -> int:
    scenarios = build(quick=args.quick)
    unknown = sorted(set(args.knob or []) - {knob for _name, knob, _values in SWEEP})
    if unknown:
        print(
            f"unknown knob(s): {', '.join(unknown)}; swept: {', '.join(sorted({k for _n, k, _v in SWEEP}))}",
            file=sys.stderr,
        )
        return 2
    work = Path(args.work or tempfile.mkdtemp(prefix="synclient-bench-sweep-"))
    groups = []
    for name, knob, values in SWEEP:
        if (args.scenarios and name not in args.scenarios) or (args.knob and knob not in args.knob):
            continue
        points = []
        for value in values:
            runs = harness.run_scenario(
                scenarios[name],
                work,
                ["synclient"],
                args.repeat or 3,
                config=_config_for(knob, value),
                log=lambda text: None,
                max_slow_repeats=None,
            )
            good = [r.wall for r in runs if r.ok]
            point = {
                "value": value,
                "config": _config_for(knob, value),
                "wall": statistics.median(good) if good else None,
                "walls": [round(w, 3) for w in good],
                "rest_calls": statistics.median([r.rest_calls for r in runs]),
                "throttled_429": statistics.median([r.throttled_429 for r in runs]),
                "cpu_seconds": statistics.median([r.cpu_seconds for r in runs]),
                "peak_rss_mb": max(r.peak_rss_mb for r in runs),
            }
            print(f"{name} {knob}={value}: {point}", flush=True)
            points.append(point)
        groups.append({"scenario": name, "knob": knob, "points": points})
    sweep = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine(), "groups": groups}
    out = Path(args.out) if args.out else RESULTS / f"{datetime.date.today().isoformat()}-sweep.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(sweep, indent=1))
    print(f"sweep: {out}")
    if args.write_docs:
        write_sweep_docs(sweep, out)
    return 0


def write_sweep_docs(sweep: dict, out: Path) -> None:
    """The sweep block of docs/benchmarks.md (table + plot) from a sweep JSON."""
    lines = [
        "| scenario | knob | value | median wall s (runs) | REST calls | CPU s | peak RSS MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for group in sweep["groups"]:
        for p in group["points"]:
            shown = report.knob_label(group["knob"], p["value"])
            wall = f"{p['wall']:.3f} ({', '.join(f'{w:.2f}' for w in p['walls'])})" if p["wall"] else "failed"
            lines.append(
                f"| {group['scenario']} | {group['knob']} | {shown} | {wall} | {p['rest_calls']:.0f} "
                f"| {p['cpu_seconds']:.2f} | {p['peak_rss_mb']:.0f} |"
            )
    png = report.sweep_plot(sweep, RESULTS)
    _write_doc_block(
        "sweep",
        "\n".join(lines)
        + "\n"
        + (f"\n![sweep](../benchmarks/results/{png.name})\n" if png else "")
        + f"\nRaw figures: [`benchmarks/results/{out.name}`](../benchmarks/results/{out.name}).\n",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (("run", "run scenarios with every contender"), ("sweep", "sweep TransferConfig knobs")):
        sub = commands.add_parser(name, help=helptext)
        sub.add_argument(
            "scenarios",
            nargs="*",
            metavar="SCENARIO",
            help="S1 S1h S1t S2 S3 S3h S4 S5 S5h S6 S6s S7 S8 S9 S10 S11 S11x M1 M1r, or any name + 'h': over HTTPS "
            "(default: all)",
        )
        sub.add_argument("--repeat", type=int, default=None, help="runs per contender (default 3; 1 with --quick)")
        sub.add_argument("--quick", action="store_true", help="small sizes (the CI smoke test)")
        sub.add_argument("--out", help="results JSON path (default benchmarks/results/<date>.json)")
        sub.add_argument("--work", help="scratch directory for downloads (default: a new temporary one)")
        sub.add_argument("--write-docs", action="store_true", help="update the tables/plots in docs/benchmarks.md")
        if name == "sweep":
            sub.add_argument("--knob", action="append", help="sweep only this knob (repeatable; default: all)")
        if name == "run":
            sub.add_argument("--contenders", help=f"comma-separated subset of {','.join(ORDER)}")
            sub.add_argument(
                "--tls",
                action="store_true",
                help="also run every named scenario over HTTPS (its 'h' variant), side by side with it",
            )
            sub.add_argument(
                "--emulator-knob",
                action="append",
                metavar="NAME=VALUE",
                help="set an emulator knob over the named scenarios' own (repeatable), e.g. "
                "view_build_seconds_per_1000_files=8",
            )
            sub.add_argument(
                "--slow-after",
                type=float,
                default=60.0,
                help="a contender whose run takes longer than this many seconds is not repeated",
            )
    rep = commands.add_parser("report", help="re-render the table/plots from a results JSON")
    rep.add_argument("results")
    rep.add_argument("--write-docs", action="store_true")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return {"run": cmd_run, "sweep": cmd_sweep, "report": cmd_report}[args.command](args)
