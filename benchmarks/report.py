"""Medians, ratios, latency bounds, the Markdown table and the PNG plots."""

from __future__ import annotations

import functools
import math
import statistics
from pathlib import Path
from typing import Dict, List, Optional

from benchmarks.contenders import AUTO_CONTENDERS, ORDER
from benchmarks.scenarios import Scenario

PEERS = ("synapseclient", "aria2c", "curl")
DEFAULT_WORKERS = 16


def _num(value) -> float:
    from synclient.emulator.knobs import parse_size

    return float(parse_size(value)) if isinstance(value, str) else float(value or 0)


def latency_bound(scenario: Scenario, workers: int = DEFAULT_WORKERS) -> Optional[Dict[str, float]]:
    """A lower bound on wall time for a client with ``workers`` connections against these knobs.

    bound = max(critical path, REST calls x API latency / allowed concurrency, bytes / (connections x cap)).
    REST calls are the minimum a client needs: the root header, one page per 50 children of every container,
    one bundle per file and one URL batch per 100 files (for a no-op re-sync: the header and the listing pages; for a
    list of ids: one header call for the list, one bundle per file and one URL batch per 100, no listing). Issue 17:
    a query over a file view costs its query jobs (start, the pending polls, the result: per page of rows), one
    header call per 1,000 rows and one URL batch per 100 files, no bundle (its rows carry the file columns); a sync
    planned from a view (a scenario with ``view``: the bound is that of its fastest way) costs the listing, the
    view's query jobs over every file and one URL batch per 100 files, no bundle. Issue 33: the download cart costs
    its query jobs (a page per 50 files, the first alone, then a count, then the others 4 at a time; the actions'
    page), its manifest job and URL, one URL batch per 100 files and one remove per 1,000, no bundle.
    """
    knobs = dict(scenario.knobs)
    if knobs.get("profile") == "synapse":
        from synclient.emulator.knobs import SYNAPSE_PROFILE

        knobs = {**SYNAPSE_PROFILE, **{k: v for k, v in knobs.items() if k != "profile"}}
    api = _num(knobs.get("api_latency_ms", 0)) / 1000.0
    data_first_byte = _num(knobs.get("data_latency_ms", 0)) / 1000.0
    cap = _num(knobs.get("bandwidth_per_conn", 0))
    concurrency = min(workers, int(knobs.get("max_concurrent_per_user") or workers))
    files = scenario.files
    pages = _listing_pages(scenario.spec["projects"][0]["children"])
    depth = max(rel.count("/") for rel, _, _ in files) + 1  # listings on the way down to the deepest file
    page_rows = int(knobs.get("query_page_rows") or 1000)
    per_job = 2 + int(knobs.get("query_pending_polls", 1))  # start, pending polls, the result
    if scenario.job == "query":  # query pages one after another, then headers -> URL batch -> data
        query_calls = math.ceil(len(files) / page_rows) * per_job
        calls = query_calls + math.ceil((len(files) + 1) / 1000) + math.ceil(len(files) / 100)
        critical = (query_calls + 2) * api + data_first_byte
        data = len(files) * data_first_byte / workers + (scenario.total_bytes / (workers * cap) if cap else 0.0)
    elif scenario.view and not scenario.resync:  # listing and the view's rows, then URL batch -> data
        query_calls = math.ceil(len(scenario.all_files) / page_rows) * per_job
        calls = 1 + pages + query_calls + math.ceil(len(files) / 100)
        critical = (max(1 + depth, query_calls) + 1) * api + data_first_byte
        data = len(files) * data_first_byte / workers + (scenario.total_bytes / (workers * cap) if cap else 0.0)
    elif scenario.job == "cart":  # the cart's first page, its count, the later pages 4 at a time, then URL -> data
        cart_pages = math.ceil(len(files) / 50)
        jobs = cart_pages + 2 + (cart_pages > 1)  # the pages, the actions' page, the manifest, the count
        calls = jobs * per_job + 1 + math.ceil(len(files) / 100) + math.ceil(len(files) / 1000)
        rounds = 1 + (1 + math.ceil((cart_pages - 1) / 4) if cart_pages > 1 else 0)  # jobs one after another
        critical = (rounds * per_job + 3) * api + data_first_byte
        data = len(files) * data_first_byte / workers + (scenario.total_bytes / (workers * cap) if cap else 0.0)
    elif scenario.job == "ids":  # POST /entity/header, then bundle -> URL batch -> data: no walk down the tree
        calls = 1 + len(files) + math.ceil(len(files) / 100)
        critical = 3 * api + data_first_byte
        data = len(files) * data_first_byte / workers + (scenario.total_bytes / (workers * cap) if cap else 0.0)
    elif scenario.resync:
        calls = 1 + pages
        critical = (1 + depth) * api
        data = 0.0
    else:
        calls = 1 + pages + len(files) + math.ceil(len(files) / 100)
        critical = (1 + depth + 2) * api + data_first_byte
        data = len(files) * data_first_byte / workers + (scenario.total_bytes / (workers * cap) if cap else 0.0)
    if api == 0 and cap == 0:
        return None
    rest = calls * api / concurrency
    rate_limit = int(knobs.get("max_requests_per_minute") or 0)
    window = _num(knobs.get("rate_window_seconds", 60.0))
    if rate_limit and calls > rate_limit:
        # the window's sustained rate (issue 13's bound); a first burst into an empty window can beat it a little
        rest = max(rest, calls * window / rate_limit)
    bound = max(critical, rest, data)
    return {"seconds": bound, "calls": calls, "critical_path": critical, "rest": rest, "data": data, "workers": workers}


def _listing_pages(children) -> int:
    listed = [child for child in children if child["type"] not in ("entityview", "table")]  # not synced
    pages = max(1, math.ceil(len(listed) / 50))
    for child in children:
        if child["type"] == "folder":
            pages += _listing_pages(child["children"])
    return pages


def _median(runs: List[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def _ratio_text(row: dict, peer: str) -> str:
    """A contender's time as a multiple of ``peer``'s, for the table; empty when that peer did not run."""
    return f"{row['ratios'][peer]:.2f}" if peer in row["ratios"] else ""


def summarize(scenario: Scenario, runs: List[dict]) -> Dict[str, dict]:
    """contender -> medians and derived figures over its byte-exact runs (or its status when none)."""
    rows: Dict[str, dict] = {}
    for contender in ORDER:
        mine = [r for r in runs if r["contender"] == contender]
        if not mine:
            continue
        good = [r for r in mine if r["ok"]]
        if not good:
            rows[contender] = {"ok": False, "status": mine[0]["status"], "runs": len(mine)}
            continue
        med = functools.partial(_median, good)
        wall = med("wall")
        row = {
            "ok": True,
            "status": "byte-exact",
            "runs": len(good),
            "wall": wall,
            "walls": [round(r["wall"], 3) for r in good],
            "mb_s": (0.0 if scenario.resync else scenario.total_bytes / wall / 1e6),
            "files_s": len(scenario.files) / wall,
            "rest_calls": med("rest_calls"),
            "throttled_429": med("throttled_429"),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in good),
            "cpu_seconds": med("cpu_seconds"),
            "data_requests": med("data_requests"),
            "process_wall": med("process_wall"),
            "load_average": max(r.get("load_average", 0.0) for r in good),
            "server_cpu_seconds": statistics.median(r.get("server_cpu_seconds", 0.0) for r in good),
        }
        for counter in ("connections", "tls_handshakes", "tls_resumed"):  # issue 18: medians per listener
            listeners = sorted({listener for r in good for listener in r.get(counter) or {}})
            row[counter] = {
                listener: statistics.median((r.get(counter) or {}).get(listener, 0) for r in good)
                for listener in listeners
            }
        cap = _num(scenario.knobs.get("bandwidth_per_conn", 0))
        row["peak_connections"] = max(r.get("peak_data_connections", 0) for r in good)
        paced = [r for r in good if r.get("paced_body_seconds")]
        if cap and paced:
            # Per-connection cap use: bytes over (seconds the capped bodies took x cap). 1.0: every open connection
            # ran at its cap, the link and not the client's reading was the limit.
            row["cap_use"] = statistics.median(r["data_bytes"] / (r["paced_body_seconds"] * cap) for r in paced)
            # The same against the peak number of connections over the whole wall time (idle gaps count).
            row["cap_share_of_peak"] = (
                scenario.total_bytes / wall / (row["peak_connections"] * cap) if row["peak_connections"] else 0.0
            )
        rows[contender] = row
    walk = rows.get("synclient")
    for contender in AUTO_CONTENDERS:  # issue 34: `--view auto` against the walk, and what every run left behind
        row = rows.get(contender)
        if row and row.get("ok"):
            mine = [r for r in runs if r["contender"] == contender]
            row["left_behind"] = sorted({item for r in mine for item in r.get("left_behind") or []})
            if walk and walk.get("ok"):
                row["vs_walk"] = {"calls": walk["rest_calls"] / row["rest_calls"], "wall": walk["wall"] / row["wall"]}
    for contender, row in rows.items():
        if row.get("ok"):
            row["ratios"] = {
                peer: rows[peer]["wall"] / row["wall"]
                for peer in PEERS
                if peer in rows and rows[peer].get("ok") and peer != contender
            }
    return rows


def markdown(results: dict) -> str:
    lines = []
    for name, entry in results["scenarios"].items():
        bound = entry.get("bound")
        lines.append(f"### {name}: {entry['title']}")
        lines.append("")
        knobs = f"`{entry['knobs_text']}`" if entry["knobs_text"] else "no knobs"
        lines.append(
            f"{entry['files']} files, {entry['bytes'] / 1e6:,.1f} MB; emulator: {knobs}"
            + (
                f"; latency bound at {bound['workers']} workers: **{bound['seconds']:.2f} s** "
                f"({bound['calls']} REST calls)"
                if bound
                else ""
            )
        )
        lines.append("")
        lines.append(
            "| contender | runs | median wall s | MB/s | files/s | REST calls | 429s | peak RSS MB | CPU s "
            "| data conns | cap use | x synapseclient | x aria2c | x curl | x bound |"
        )
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for contender, row in entry["summary"].items():
            if not row.get("ok"):
                lines.append(f"| {contender} | {row['runs']} | {row['status']} |  |  |  |  |  |  |  |  |  |  |  |  |")
                continue
            cap_use = f"{row['cap_use']:.0%} ({row['cap_share_of_peak']:.0%})" if "cap_use" in row else ""
            ratio = functools.partial(_ratio_text, row)
            vs_bound = f"{row['wall'] / bound['seconds']:.2f}" if bound else ""
            lines.append(
                f"| {contender} | {row['runs']} | {row['wall']:.3f} | {row['mb_s']:.1f} | "
                f"{row['files_s']:.1f} | {row['rest_calls']:.0f} | {row['throttled_429']:.0f} | "
                f"{row['peak_rss_mb']:.0f} | {row['cpu_seconds']:.2f} | {row.get('peak_connections', 0)} | "
                f"{cap_use} | {ratio('synapseclient')} | "
                f"{ratio('aria2c')} | {ratio('curl')} | {vs_bound} |"
            )
        vs_walk = [
            f"- {contender}: **{row['vs_walk']['calls']:.1f}x** fewer REST calls and **{row['vs_walk']['wall']:.1f}x** "
            f"less wall than the walk (`synclient`); left behind in the account: "
            + ("; ".join(row["left_behind"]) if row["left_behind"] else "nothing")
            + f" (checked after each of its {row['runs']} runs)"
            for contender, row in entry["summary"].items()
            if "vs_walk" in row
        ]
        lines += ([""] + vs_walk if vs_walk else []) + [""]
    lines.append(
        "`x peer` = peer's median wall / this contender's median wall (above 1: faster than the peer). "
        "`x bound` = wall / latency bound (1.0 would be perfect). `data conns` = most bodies the storage "
        "served at once. `cap use` (bandwidth-capped scenarios) = bytes / (seconds the capped bodies took "
        "x per-connection cap): how much of each open connection's cap the client's reading used; in "
        "brackets the same over the whole wall time at the peak connection count (idle gaps count)."
    )
    return "\n".join(lines) + "\n"


def tls_markdown(results: dict) -> str:
    """Issue 18: each scenario next to its HTTPS variant, per contender: median walls, their ratio, the client's and
    the emulator's CPU (medians), the extra CPU per GB over HTTPS, handshakes, and the ratio to synapseclient."""
    from benchmarks.scenarios import plain_of

    lines = []
    for name, tls_entry in results["scenarios"].items():
        plain = plain_of(name)
        if not tls_entry.get("tls") or plain not in results["scenarios"]:
            continue
        entry = results["scenarios"][plain]
        gb = entry["bytes"] / 1e9
        per_gb = gb >= 0.1  # CPU per GB only where the bytes, not the calls, are the work
        lines.append(f"#### {plain} plain and {name} over HTTPS: {entry['title']}")
        lines.append("")
        lines.append(
            "| contender | plain: median wall s (runs) | HTTPS: median wall s (runs) | HTTPS / plain "
            "| client CPU s, plain / HTTPS | emulator CPU s, plain / HTTPS "
            + ("| extra CPU s per GB over HTTPS, client / emulator " if per_gb else "")
            + "| TLS handshakes (API + data) | x synapseclient, plain / HTTPS |"
        )
        lines.append("|---|---|---|---|---|---|" + ("---|" if per_gb else "") + "---|---|")
        for contender in ORDER:
            a, b = entry["summary"].get(contender), tls_entry["summary"].get(contender)
            if a is None and b is None:
                continue
            if not (a and a.get("ok") and b and b.get("ok")):
                lines.append(
                    f"| {contender} | {_wall_cell(a)} | {_wall_cell(b)} |  |  |  |"
                    + (" |" if per_gb else "")
                    + "  |  |"
                )
                continue
            handshakes = b.get("tls_handshakes") or {}
            shakes = f"{handshakes.get('api', 0):.0f} + {handshakes.get('data', 0):.0f}" + (
                f" + {handshakes['external']:.0f} ext." if handshakes.get("external") else ""
            )
            ratio = " / ".join(
                f"{r['ratios']['synapseclient']:.2f}" if "synapseclient" in r.get("ratios", {}) else "-" for r in (a, b)
            )
            extra = (
                f"| {(b['cpu_seconds'] - a['cpu_seconds']) / gb:.2f} / "
                f"{(b.get('server_cpu_seconds', 0) - a.get('server_cpu_seconds', 0)) / gb:.2f} "
                if per_gb
                else ""
            )
            lines.append(
                f"| {contender} | {_wall_cell(a)} | {_wall_cell(b)} | {b['wall'] / a['wall']:.2f} "
                f"| {a['cpu_seconds']:.2f} / {b['cpu_seconds']:.2f} "
                f"| {a.get('server_cpu_seconds', 0):.2f} / {b.get('server_cpu_seconds', 0):.2f} {extra}"
                f"| {shakes} | {ratio} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def _wall_cell(row: Optional[dict]) -> str:
    if row is None:
        return ""
    if not row.get("ok"):
        return row["status"]
    return f"{row['wall']:.3f} ({', '.join(f'{w:.2f}' for w in row['walls'])})"


def plots(results: dict, directory: Path) -> List[Path]:
    """One PNG: median wall time per scenario and contender (log scale), with the latency bound marked."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    names = list(results["scenarios"])
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        entry = results["scenarios"][name]
        labels, values = [], []
        for contender, row in entry["summary"].items():
            if row.get("ok"):
                labels.append(contender)
                values.append(row["wall"])
        colors = ["tab:blue" if label.startswith("synclient") else "tab:gray" for label in labels]
        ax.bar(range(len(values)), values, color=colors)
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_title(name, fontsize=10)
        if entry.get("bound"):
            ax.axhline(entry["bound"]["seconds"], color="tab:red", linestyle="--", linewidth=1, label="bound")
            ax.legend(fontsize=7)
    axes[0][0].set_ylabel("median wall time, s (log)")
    fig.tight_layout()
    path = directory / "benchmarks-wall.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


#: sweep knobs counted in bytes (shown in KiB/MiB)
BYTE_KNOBS = ("multipart_threshold", "part_size", "chunk_size")


def knob_label(knob: str, value: object) -> str:
    """A sweep value as people read it: byte-sized knobs in MiB or KiB (``33554432`` is unreadable)."""
    if knob in BYTE_KNOBS and isinstance(value, int):
        return f"{value >> 20} MiB" if value >= 1 << 20 else f"{value >> 10} KiB"
    return str(value)


def sweep_plot(sweep: dict, directory: Path) -> Optional[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    groups = sweep["groups"]
    if not groups:
        return None
    columns = min(len(groups), 4)
    rows = -(-len(groups) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.4 * columns, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(groups) :]:
        ax.set_visible(False)
    for ax, group in zip(axes.flat, groups):
        xs = [knob_label(group["knob"], point["value"]) for point in group["points"]]
        ys = [point["wall"] if point["wall"] is not None else float("nan") for point in group["points"]]
        ax.plot(xs, ys, marker="o")
        ax.set_title(f"{group['scenario']}: {group['knob']}", fontsize=9)
        ax.set_ylabel("median wall s", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    path = directory / "benchmarks-sweep.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
