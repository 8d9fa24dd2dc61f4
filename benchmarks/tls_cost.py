"""What TLS costs per GB on this machine, without any HTTP client (issue 18): ``python -m benchmarks.tls_cost``.

Two floors to read the S5/S5h rows against:

- the raw cipher: ``openssl speed -evp CIPHER -bytes 16384`` (one TLS record) for the cipher a Python client and
  the emulator's server context negotiate on loopback (found by a handshake, not assumed);
- Python's ``ssl`` on loopback: a server process sends ``--gib`` GiB from memory over one connection, the client
  (this process) ``recv_into`` a 1 MiB buffer until the end, plain and over TLS (a trustme CA, as the emulator's),
  with a socket timeout as urllib3 sets one. CPU of each side from ``getrusage``; the extra CPU over TLS divided by
  the GB moved is the least a Python client and a Python server pay for TLS per GB.

Prints a JSON object (and writes it with ``--out``). Single-threaded on each side: on 2 cores the two sides run
on one core each.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import resource
import shutil
import socket
import ssl
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, Optional

GiB = 1024**3
BLOCK = 1024 * 1024

#: TLS 1.3 suites -> ``openssl speed -evp`` names
EVP_NAMES = {
    "TLS_AES_256_GCM_SHA384": "aes-256-gcm",
    "TLS_AES_128_GCM_SHA256": "aes-128-gcm",
    "TLS_CHACHA20_POLY1305_SHA256": "chacha20-poly1305",
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _serve(listener: socket.socket, context: Optional[ssl.SSLContext], total: int, answer) -> None:
    """One connection: ``total`` bytes from a 1 MiB buffer, then close; sends back its CPU seconds for the body."""
    connection, _address = listener.accept()
    if context is not None:
        connection = context.wrap_socket(connection, server_side=True)
    payload = memoryview(bytes(range(256)) * (BLOCK // 256))
    started = _cpu()
    sent = 0
    while sent < total:
        connection.sendall(payload[: min(BLOCK, total - sent)])
        sent += min(BLOCK, total - sent)
    cpu = _cpu() - started
    connection.close()  # no close_notify wait: the client stops at ``total``
    answer.send(cpu)


def transfer(total: int, tls: Optional[dict]) -> Dict[str, object]:
    """Move ``total`` bytes over loopback, plain (``tls`` None) or TLS (``tls``: the CA's and server's PEM files)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    server_context = client_context = None
    if tls:
        server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)  # as the emulator's (tls.py)
        server_context.load_cert_chain(tls["cert"], tls["key"])
        client_context = ssl.create_default_context(cafile=tls["ca"])  # as urllib3's, with the CA given
    receive, answer = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.get_context("fork").Process(target=_serve, args=(listener, server_context, total, answer))
    server.start()
    port = listener.getsockname()[1]
    listener.close()
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)  # a timeout, as urllib3's sockets have
    if client_context is not None:
        sock = client_context.wrap_socket(sock, server_hostname="127.0.0.1")
    buffer = bytearray(BLOCK)
    view = memoryview(buffer)
    started_wall, started_cpu = time.perf_counter(), _cpu()
    got = 0
    while got < total:
        count = sock.recv_into(view, min(BLOCK, total - got))
        if not count:
            break
        got += count
    cpu = _cpu() - started_cpu
    wall = time.perf_counter() - started_wall
    result = {"bytes": got, "wall": wall, "client_cpu": cpu, "server_cpu": receive.recv()}
    if client_context is not None:
        result["version"], result["cipher"] = sock.version(), sock.cipher()[0]
    sock.close()
    server.join()
    return result


def openssl_speed(evp: str, seconds: int = 3) -> Optional[float]:
    """Bytes per second of ``openssl speed -evp`` on 16 KiB blocks (one TLS record), one core."""
    try:
        text = subprocess.run(
            ["openssl", "speed", "-evp", evp, "-bytes", "16384", "-seconds", str(seconds)],
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    line = next((row for row in text.splitlines() if row.lower().startswith(evp.lower())), "")
    match = re.search(r"([\d.]+)k\s*$", line)
    return float(match.group(1)) * 1000 if match else None  # openssl reports in 1000s of bytes per second


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tls_cost", description=__doc__.split("\n")[0])
    parser.add_argument("--gib", type=float, default=2.0, help="GiB per transfer (default 2, as S5)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", help="also write the JSON here")
    args = parser.parse_args(argv)
    import trustme

    folder = Path(tempfile.mkdtemp(prefix="synclient-tls-cost-"))
    ca = trustme.CA(organization_name="synclient tls_cost")
    certificate = ca.issue_cert("127.0.0.1")
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    certificate.private_key_pem.write_to_path(str(folder / "key.pem"))
    certificate.cert_chain_pems[0].write_to_path(str(folder / "cert.pem"))
    tls = {"ca": str(folder / "ca.pem"), "cert": str(folder / "cert.pem"), "key": str(folder / "key.pem")}
    total = int(args.gib * GiB)
    runs = {"plain": [], "tls": []}
    try:
        for _ in range(args.repeat):  # alternating
            runs["plain"].append(transfer(total, None))
            runs["tls"].append(transfer(total, tls))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    gb = total / 1e9
    med = {
        mode: {key: statistics.median(run[key] for run in mode_runs) for key in ("wall", "client_cpu", "server_cpu")}
        for mode, mode_runs in runs.items()
    }
    cipher = runs["tls"][0]["cipher"]
    evp = EVP_NAMES.get(cipher)
    speed = openssl_speed(evp) if evp else None
    result = {
        "gib": args.gib,
        "repeat": args.repeat,
        "version": runs["tls"][0]["version"],
        "cipher": cipher,
        "runs": runs,
        "medians": med,
        "extra_cpu_s_per_gb": {
            "client": (med["tls"]["client_cpu"] - med["plain"]["client_cpu"]) / gb,
            "server": (med["tls"]["server_cpu"] - med["plain"]["server_cpu"]) / gb,
        },
        "openssl_speed": {"evp": evp, "bytes_per_second_16k": speed, "cpu_s_per_gb": (1e9 / speed) if speed else None},
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
