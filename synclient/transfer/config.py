"""Every transfer knob in one validated object (s3transfer's TransferConfig habit)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from synclient.errors import ConfigError
from synclient.transfer.bandwidth import BandwidthTimetable

MiB = 1024 * 1024


@dataclass(frozen=True)
class TransferConfig:
    """Knobs of the data plane, validated. The defaults are the benchmark suite's choice (``python -m benchmarks
    sweep``); the figures behind each are in docs/benchmarks.md ("Defaults sweep").

    - ``max_workers``: threads of the one shared pool (listings, bundles, downloads and parts all share it).
    - ``multipart_threshold``: files of at least this size are fetched as parallel ranged parts.
    - ``part_size``: size of one ranged part.
    - ``streams_per_file``: ranged parts of one file in flight at once (aria2c's ``-x``, rclone's
      ``--multi-thread-streams``); the rest of the pool stays free for other files.
    - ``chunk_size``: bytes read per ``readinto``; also how often the cancel event is checked. Buffers are reused
      per thread, so it costs at most one chunk of memory per thread that reads large bodies.
    - ``stall_timeout``: a body that delivers no byte for this long is cut and resumed from its offset.
    - ``connect_timeout``: seconds to open a connection to the storage host.
    - ``max_attempts``: tries per stream (part or small file) before the file is reported failed.
    - ``url_batch_size``: file handles per ``/fileHandle/batch`` call (the server allows 100).
    - ``direct_io``: write multipart files, and read them back for the MD5, around the page cache (``O_DIRECT``)
      on local disk filesystems (ext4, xfs, btrfs, ...); never on network, FUSE or memory filesystems, and
      buffered wherever the filesystem refuses it. See synclient/transfer/direct.py for why.
    - ``listing_backlog``: folder listings pause while this many files wait for their bundle call or their
      download to start, so the walk runs ahead of the downloads by a bounded amount (memory stays bounded on huge
      trees). Default (None): ``max(1000, 8 * max_workers)``.
    - ``bwlimit``: the bandwidth limit of the data plane, as rclone's ``--bwlimit``: ``"10M"`` (10 MiB/s, binary
      units; no unit: KiB/s), ``"512k"``, ``"off"``, or a timetable in local time ``"08:00,10M 18:00,off"`` (also
      ``"Mon-08:00,2M"``); an int is bytes per second. All connections, parts and files of this process share it
      (synclient/transfer/bandwidth.py); on a Dask cluster each worker process applies it on its own, so the
      cluster's total is up to workers x limit. Default (None): no limit.
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
    listing_backlog: Optional[int] = None
    bwlimit: Union[str, int, None] = None

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
            (self.listing_backlog is None or self.listing_backlog >= 1, "listing_backlog must be >= 1"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        self.bandwidth_timetable()  # (bad syntax: one line, now)

    def bandwidth_timetable(self) -> Optional[BandwidthTimetable]:
        """``bwlimit`` read; None for no limit."""
        try:
            return BandwidthTimetable.of(self.bwlimit)
        except ConfigError as exc:
            raise ConfigError(f"bwlimit {exc}") from None
