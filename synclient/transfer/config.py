"""Every transfer knob in one validated object (s3transfer's TransferConfig habit)."""
from __future__ import annotations

from dataclasses import dataclass

from synclient.errors import ConfigError

MiB = 1024 * 1024


@dataclass(frozen=True)
class TransferConfig:
    """Knobs of the data plane. Defaults are chosen by the benchmark suite's sweep (``python -m benchmarks sweep``,
    figures in docs/benchmarks.md, 2 cores, 2026-11-23, medians of 3):

    - ``max_workers=64``: S1 (400 tiny files, 100 ms API latency) 4.58 / 3.09 / 2.46 / 2.33 s at 16 / 32 / 64 / 96
      workers (latency-bound: more requests in flight; the REST gate still adapts below this on 429s). 96 gains
      5% more for 2 MB more RSS per 32 threads; 64 it is.
    - ``streams_per_file=32``: S3 (2 GiB, 50 MB/s per connection) 11.70 / 6.71 / 5.34 / 4.38 s at 4 / 8 / 16 / 32
      streams; S5 (2 GiB, raw loopback) 4.25 / 4.32 / 4.13 / 4.14 s: more streams only help where each
      connection is capped, and cost nothing measurable where it is not.
    - ``part_size=32 MiB``: S3 5.07 / 5.13 / 5.10 / 5.59 s at 8 / 16 / 32 / 64 MiB (16 streams), CPU falling with
      size (7.6 / 7.5 / 6.9 / 6.9 s).
    - ``multipart_threshold=32 MiB``: S2 (mixed tree) 5.24 / 5.23 / 5.97 s at 8 / 32 / 128 MiB (first sweep).
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
    streams_per_file: int = 32
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
