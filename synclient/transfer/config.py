"""Every transfer knob in one validated object (s3transfer's TransferConfig habit)."""
from __future__ import annotations

from dataclasses import dataclass

from synclient.errors import ConfigError

MiB = 1024 * 1024


@dataclass(frozen=True)
class TransferConfig:
    """Knobs of the data plane. Defaults are chosen by the benchmark suite's sweep (``python -m benchmarks sweep``,
    figures in docs/benchmarks.md, 2 cores, 2026-11-23, medians of 3; third sweep, with direct I/O):

    - ``max_workers=64``: S1 (400 tiny files, 100 ms API latency) 4.62 / 2.98 / 2.39 / 2.56 s at 16 / 32 / 64 / 96
      workers (latency-bound: more requests in flight; the REST gate still adapts below this on 429s).
    - ``streams_per_file=16``: S3 (2 GiB, 50 MB/s per connection) 11.67 / 6.23 / 4.15 / 4.26 s at 4 / 8 / 16 / 32
      streams; S5 (2 GiB, raw loopback) 3.83 / 3.62 / 4.27 / 4.47 s. Capped connections need enough streams; past
      that, more streams take CPU from the MD5, which is then the critical path. 16 also holds 17 MB less RSS.
    - ``part_size=32 MiB``: S3 4.35 / 4.53 / 4.47 / 4.23 s at 8 / 16 / 32 / 64 MiB: flat within the noise.
    - ``multipart_threshold=32 MiB``: S2 (mixed tree) 3.43 / 3.91 / 3.52 s at 8 / 32 / 128 MiB, within the run-to-run
      spread (S2 at 32 MiB measured 3.0-4.0 s across the sweep); unchanged.
    - ``url_batch_size=100``: S1 2.35 / 2.29 / 2.33 / 2.38 s and S2 3.35 / 3.33 / 3.34 / 3.17 s at 10 / 25 / 50 / 100
      handles per call: flat, so the fewest calls (S1 456 against 492), which is what Synapse's rate limit counts.
    - ``direct_io=True``: S5 6.26 -> 4.12 s and 8.3 -> 4.4 CPU s; S3 4.89 -> 4.91 s but 6.4 -> 4.6 CPU s and no
      cold-memory outliers (buffered: 4.2-7.8 s); S2 3.11 -> 3.36 s (within the noise; 512 MiB of its 749 MB).
    - ``chunk_size=1 MiB``: the unit of reads, writes and cancel checks; buffers are reused per thread, so it
      costs at most one chunk of memory per thread that reads large bodies.

    - ``max_workers``: threads of the one shared pool (listings, bundles, downloads and parts all share it).
    - ``multipart_threshold``: files of at least this size are fetched as parallel ranged parts.
    - ``part_size``: size of one ranged part.
    - ``streams_per_file``: ranged parts of one file in flight at once (aria2c's ``-x``, rclone's
      ``--multi-thread-streams``); the rest of the pool stays free for other files.
    - ``chunk_size``: bytes read per ``readinto``; also how often the cancel event is checked.
    - ``stall_timeout``: a body that delivers no byte for this long is cut and resumed from its offset.
    - ``max_attempts``: tries per stream (part or small file) before the file is reported failed.
    - ``url_batch_size``: file handles per ``/fileHandle/batch`` call (the server allows 100).
    - ``direct_io``: write multipart files, and read them back for the MD5, around the page cache (``O_DIRECT``)
      on local disk filesystems (ext4, xfs, btrfs, ...); never on network, FUSE or memory filesystems, and
      buffered wherever the filesystem refuses it. See synclient/transfer/direct.py for why.
    """

    max_workers: int = 64
    multipart_threshold: int = 32 * MiB
    part_size: int = 32 * MiB
    streams_per_file: int = 16
    chunk_size: int = 1 * MiB
    stall_timeout: float = 30.0
    connect_timeout: float = 10.0
    max_attempts: int = 6
    url_batch_size: int = 100
    direct_io: bool = True

    def __post_init__(self) -> None:
        checks = [
            (1 <= self.max_workers <= 512, "max_workers must be between 1 and 512"),
            (self.part_size >= 64 * 1024, "part_size must be at least 64 KiB"),
            (self.multipart_threshold >= self.part_size, "multipart_threshold must be >= part_size"),
            (1 <= self.streams_per_file <= 512, "streams_per_file must be between 1 and 512"),
            (4096 <= self.chunk_size <= 64 * MiB, "chunk_size must be between 4 KiB and 64 MiB"),
            (self.stall_timeout > 0, "stall_timeout must be positive"),
            (self.max_attempts >= 1, "max_attempts must be >= 1"),
            (1 <= self.url_batch_size <= 100, "url_batch_size must be between 1 and 100"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
