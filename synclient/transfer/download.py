"""Download strategies: one streaming GET for small files, parallel ranged parts for large ones.

Both write to a hidden partial file beside the destination and put the file at its final path only after its size
and MD5 were checked (``os.replace``: atomic on one filesystem). A multipart download is a set of PART tasks on the
shared pool; none waits for another: each part writes at its offset with ``os.pwrite`` and counts down, and the
part that finishes last finalizes the file. The MD5 is computed while parts arrive, over the finished prefix of
the file (:class:`~synclient.transfer.hashing.PrefixHasher`), so finalizing a large file does not re-read it all
at the end.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Deque, Dict, Iterator, List, Optional, Tuple

import tenacity

from synclient.errors import (
    Cancelled,
    CertificateError,
    ExternalCertificateError,
    IntegrityError,
    LocalIOError,
    NoRoomForFileError,
    PlatformError,
    RangeNotHonouredError,
    SynclientError,
    TransferCapReached,
    TransferError,
    is_retryable,
)
from synclient.events import PlannedFile, SyncObserver
from synclient.platform.models import FileHandle, FileHandleRequest
from synclient.transfer.cap import CapTicket, TransferCap
from synclient.transfer.config import TransferConfig
from synclient.transfer.countdown import Countdown
from synclient.transfer.direct import DirectFile, open_direct, pwrite_all
from synclient.transfer.hashing import EMPTY_MD5, PrefixHasher, hash_file_range
from synclient.transfer.http import ByteRange, DataClient, UrlRejectedError, fetch_range, fetch_whole
from synclient.transfer.jobs import FetchJob
from synclient.transfer.local_copy import CopyMethod, fill_temp
from synclient.transfer.partial import (
    DurableMarks,
    JournalHeader,
    ResumeJournal,
    SymlinkFreeFolders,
    WriteTarget,
    check_plain_folder,
    check_room,
    copy_temp_path,
    journal_path,
    open_for_write,
    preallocate,
    temp_path,
)
from synclient.transfer.pool import Priority, TaskPool
from synclient.transfer.urls import SignedUrl, UrlBroker

log = logging.getLogger("synclient.transfer")
#: a fresh multipart download whose MD5 does not match is fetched again this many times before it fails
MULTIPART_VERIFY_RETRIES = 2
#: a single-stream download of at least this many bytes keeps a resume journal, so that a later run continues it
#: (a partial without one is never resumed: partial.open_for_write); a smaller one is fetched again whole
SINGLE_RESUME_MIN = 1024 * 1024
#: what makes a partial worth nothing: bytes that failed a check, a file the disk has no room for
_WORTHLESS = (IntegrityError, NoRoomForFileError)
#: what stops a stream whose written bytes are still good: Ctrl-C, the --max-transfer cap, or storage or the platform
#: failing it for good (its tries spent); they are marked at once for the next run (not bytes that failed a check,
#: nor a disk's error)
_STOPPED = (Cancelled, TransferCapReached, TransferError, PlatformError)


@dataclass
class FileJob:
    """A :class:`~synclient.transfer.jobs.FetchJob` in flight on this process's pool: the job itself (which file
    version, where, what observers were told of it) and what its fetch learns on the way (its URL, its tries, what
    the server said); it reports its outcome to ``on_done``."""

    fetch: FetchJob
    #: called once with the file's outcome: None when it is at ``destination``, verified, else its error
    on_done: Callable[[Optional[SynclientError]], None] = field(repr=False, compare=False)
    url: Optional[SignedUrl] = field(default=None, repr=False)
    rejected_url: Optional[SignedUrl] = field(default=None, repr=False)
    verify_retries: int = field(default=0, repr=False, compare=False)  # whole-file refetches after a bad MD5
    received: Optional[int] = field(default=None, repr=False, compare=False)  # bytes got, when no size was recorded
    announced: Optional[int] = field(default=None, repr=False, compare=False)  # and the length the server announced
    ranges: bool = field(default=False, repr=False, compare=False)  # and whether it takes Range
    reused: int = field(default=0, repr=False, compare=False)  # bytes kept from the partial an earlier run left
    ticket: Optional[CapTicket] = field(default=None, repr=False, compare=False)  # its share of the transfer cap

    def __post_init__(self) -> None:
        if self.handle.external_url is not None:  # its host is the file's own: an untrusted one fails this file only
            self.on_done = _external_host_failures_are_per_file(self.on_done)

    @classmethod
    def of(cls, job: FetchJob, on_done: Callable[[Optional[SynclientError]], None]) -> FileJob:
        """``job`` in flight; observers see it as ``job.planned``."""
        return cls(job, on_done)

    @property
    def entity_id(self) -> str:
        return self.fetch.entity_id

    @property
    def version(self) -> Optional[int]:
        return self.fetch.version

    @property
    def handle(self) -> FileHandle:
        return self.fetch.handle

    @property
    def destination(self) -> Path:
        return self.fetch.destination

    @property
    def planned(self) -> PlannedFile:
        """What observers are told of it: the one :class:`~synclient.events.PlannedFile` of its fetch."""
        return self.fetch.planned

    @property
    def request(self) -> FileHandleRequest:
        return FileHandleRequest(file_handle_id=self.handle.id, entity_id=self.entity_id)

    @property
    def size(self) -> int:
        return self.fetch.size

    @property
    def size_known(self) -> bool:
        """False for an external-URL file whose handle records no ``contentSize``: one GET to the end, no parts."""
        return self.fetch.size_known


def _external_host_failures_are_per_file(
    report: Callable[[Optional[SynclientError]], None],
) -> Callable[[Optional[SynclientError]], None]:
    def reported(error: Optional[SynclientError]) -> None:
        report(ExternalCertificateError.of(error) if type(error) is CertificateError else error)

    return reported


def local_error(path: Path, exc: OSError) -> LocalIOError:
    return LocalIOError.from_exception(f"cannot write {path}", exc)


@contextmanager
def reporting_failures(report: Callable[[SynclientError], None], path: Path) -> Iterator[None]:
    """Run the block; what fails in it goes to ``report`` instead of being raised: a :class:`SynclientError` as it
    is, an ``OSError`` as the :class:`LocalIOError` of writing ``path``. :class:`Cancelled` (a SynclientError too)
    is no failure of the file: it propagates, and what the task leaves (a partial file, a journal) is for the next
    run."""
    try:
        yield
    except Cancelled:
        raise
    except SynclientError as exc:
        report(exc)
    except OSError as exc:
        report(local_error(path, exc))


def _remove_quietly(path: Path) -> None:
    """Remove a partial file or journal that is of no more use; one that cannot be removed is swept later."""
    try:
        path.unlink()
    except OSError:
        pass


def _forget(temp: Path, journal: Optional[ResumeJournal]) -> None:
    """Remove a partial that must never be resumed: its journal first (a partial without one is never resumed,
    whatever happens between the two removals), then the file."""
    if journal is not None:
        journal.remove()
    _remove_quietly(temp)


def plan_parts(size: int, part_size: int) -> List[ByteRange]:
    """The ranged parts of a ``size``-byte object: consecutive, ``part_size`` each, the last one shorter."""
    return [ByteRange(start, min(start + part_size, size), size) for start in range(0, size, part_size)]


class _HashedWrite:
    """The sink of one stream into a whole file: each chunk written at its offset into ``fd``, hashed in order (the
    MD5 so far is ``md5``), journaled as it becomes durable (``marks``, part 0) and told to the observer."""

    def __init__(
        self, fd: int, observer: SyncObserver, planned: PlannedFile, marks: Optional[DurableMarks] = None
    ) -> None:
        self._fd = fd
        self._observer = observer
        self._planned = planned
        self._marks = marks
        self.md5 = hashlib.md5()

    def __call__(self, offset: int, data: memoryview) -> None:
        pwrite_all(self._fd, data, offset)
        self.md5.update(data)
        if self._marks is not None:
            self._marks.advance(0, offset + len(data))
        self._observer.bytes_transferred(self._planned, len(data))

    def restart(self) -> None:
        """Empty the file and the hash: the body comes again from its first byte (the journal says so first)."""
        if self._marks is not None:
            self._marks.reset(0, 0)
        os.ftruncate(self._fd, 0)
        self.md5 = hashlib.md5()


@dataclass
class _Multipart:
    job: FileJob
    temp: Path
    file: DirectFile
    journal: ResumeJournal
    parts: List[ByteRange]
    hasher: PrefixHasher
    resumed: bool
    countdown: Countdown  # parts to fetch + 1 (the starting task's): zero for the one caller that finalizes
    marks: DurableMarks  # each part's progress, journaled once durable
    written: Dict[int, int] = field(default_factory=dict)  # part -> end of its bytes written so far
    kept: Dict[int, int] = field(default_factory=dict)  # part -> end of its bytes an earlier run left (job.reused)
    waiting: Deque[int] = field(default_factory=deque)  # parts not yet submitted (streams_per_file are in flight)
    error: Optional[SynclientError] = None
    cancelled: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, error: SynclientError) -> None:
        with self.lock:
            if self.error is None:
                self.error = error


class Downloader:
    """Runs file jobs on the shared pool with the strategy their size calls for."""

    def __init__(
        self,
        *,
        pool: TaskPool,
        broker: UrlBroker,
        client: DataClient,
        config: TransferConfig,
        observer: SyncObserver,
        folders: Optional[SymlinkFreeFolders] = None,
        cap: Optional[TransferCap] = None,
    ) -> None:
        self.cap = cap  # the run's --max-transfer cap (transfer/cap.py): every stream's bytes are counted by it
        self._folders = folders  # the run's folder checks (partial.SymlinkFreeFolders), or None: realpath each time
        self._pool = pool
        self._broker = broker
        self._client = client
        self._config = config
        self._observer = observer

    def start(self, job: FileJob) -> None:
        """Begin a job whose URL is set (runs as a pool task)."""
        with reporting_failures(job.on_done, job.destination):
            if self.cap is not None:
                self._admit(job, self.cap)
            if not job.size_known:
                self._download_unsized(job)
            elif job.size >= self._config.multipart_threshold:
                self._start_multipart(job)
            else:
                self._download_single(job)

    def _admit(self, job: FileJob, cap: TransferCap) -> None:
        """The cap lets the job start (or raises :class:`TransferCapReached`); its share is freed when it ends."""
        ticket = job.ticket = cap.start(job.size if job.size_known else None, job.entity_id)
        report = job.on_done

        def ended(error: Optional[SynclientError]) -> None:
            cap.done(ticket)
            report(error)

        job.on_done = ended

    # -- shared pieces -----------------------------------------------------------------------------------------

    def _retrying(self) -> tenacity.Retrying:
        """Tries of one stream (a small file, or a part), as many as the error's nature allows (errors.py): a cut,
        stall, bad status or rejected URL (TransferError) and bytes that do not match (IntegrityError) are tried
        again; storage that ignores Range, local errors and the platform's errors (see :meth:`_url`) are not."""
        return tenacity.Retrying(
            retry=tenacity.retry_if_exception(is_retryable),
            reraise=True,
            stop=tenacity.stop_after_attempt(self._config.max_attempts),
            wait=tenacity.wait_random_exponential(multiplier=0.25, max=8.0),
            sleep=self._wait_unless_cancelled,
        )

    def _wait_unless_cancelled(self, seconds: float) -> None:
        """Tenacity's pause between tries: cut short when the run is cancelled."""
        self._pool.cancel_event.wait(seconds)

    def _url(self, job: FileJob) -> SignedUrl:
        """The job's URL, refreshed first when it expires soon or storage has rejected it."""
        url = job.url
        if url is None or url is job.rejected_url or not url.fresh():
            # a retryable error of this REST call comes marked spent by the platform, which already retried it:
            # the stream's tries do not multiply them
            url = self._broker.fetch_one(job.request)
            job.url = url
        return url

    def _fetch(
        self,
        job: FileJob,
        byte_range: Optional[ByteRange],
        sink: Callable[[int, memoryview], None],
        *,
        on_head: Optional[Callable[[Optional[int], bool], None]] = None,
    ) -> int:
        """One GET of ``byte_range`` (None: the whole body of a file of unknown size, ``on_head`` told the length the
        server announces and whether it takes ranges); the bytes received."""
        if self.cap is not None:  # every stream's bytes go through the run's cap (a stopped one raises)
            self.cap.check_stream(job.entity_id)
            sink = self.cap.metered(sink, job.ticket, job.entity_id)
        url = self._url(job)
        config, cancelled = self._config, self._pool.cancel_event.is_set
        try:
            if byte_range is None:
                return fetch_whole(
                    self._client,
                    url,
                    on_head=on_head,
                    sink=sink,
                    chunk_size=config.chunk_size,
                    connect_timeout=config.connect_timeout,
                    stall_timeout=config.stall_timeout,
                    cancelled=cancelled,
                )
            fetch_range(
                self._client,
                url,
                byte_range,
                sink=sink,
                chunk_size=config.chunk_size,
                connect_timeout=config.connect_timeout,
                stall_timeout=config.stall_timeout,
                cancelled=cancelled,
            )
            return byte_range.length
        except UrlRejectedError:
            job.rejected_url = url
            raise

    def _verify(self, job: FileJob, md5_hex: str) -> None:
        expected = job.handle.content_md5
        if expected and md5_hex != expected.lower():
            raise IntegrityError(f"MD5 mismatch for {job.entity_id}: got {md5_hex}, platform says {expected}")

    def _install(self, job: FileJob, temp: Path) -> None:
        # checked again at the last moment: a run can take hours
        check_plain_folder(job.destination.parent, self._folders)
        try:
            os.replace(temp, job.destination)
        except OSError as exc:
            raise local_error(job.destination, exc) from None

    # -- a copy already on this machine ----------------------------------------------------------------------------

    def copy_local(self, job: FileJob, source: Path, *, link: bool = False) -> CopyMethod:
        """Bring the job's bytes from ``source`` (synapseclient's cache) instead of storage: into the partial file
        a download would use, hashed on the way, verified (size and MD5) and installed as a download is. Raises
        (:class:`IntegrityError` for other bytes, :class:`LocalIOError`) and leaves no partial behind when the copy
        is not the file; the caller downloads it then. Does not call ``job.on_done``."""
        temp = copy_temp_path(job.destination, job.handle.id)  # never a resumable partial's name (write rule)
        try:
            filled = fill_temp(source, temp, link=link, folders=self._folders, cancelled=self._pool.cancel_event.is_set)
            if filled.size != job.size:
                raise IntegrityError(
                    f"size mismatch for {job.entity_id}: {source} has {filled.size} bytes, the platform says {job.size}"
                )
            self._verify(job, filled.md5)
            self._install(job, temp)
        except BaseException as exc:
            _remove_quietly(temp)
            if isinstance(exc, OSError) and not isinstance(exc, SynclientError):
                raise local_error(job.destination, exc) from None
            raise
        partial = temp_path(job.destination, job.handle.id)  # an earlier run's download of this file: done with
        _remove_quietly(journal_path(partial))  # (the journal first: see _forget)
        _remove_quietly(partial)
        self._observer.bytes_transferred(job.planned, job.size)  # arrived, from the disk: the progress completes
        return filled.method

    # -- one streaming GET ---------------------------------------------------------------------------------------

    def _download_single(self, job: FileJob, *, fresh: bool = False) -> None:
        temp = temp_path(job.destination, job.handle.id)
        journal = (
            ResumeJournal(
                journal_path(temp),
                JournalHeader(
                    file_handle_id=job.handle.id, size=job.size, md5=job.handle.content_md5 or "", part_size=0
                ),
            )
            if job.size >= SINGLE_RESUME_MIN
            else None
        )
        partial, durable = self._open_partial(temp, journal, fresh=fresh)
        job.reused = durable
        if durable:
            self._observer.bytes_reused(job.planned, durable)
        try:
            if job.size == 0:
                self._verify(job, EMPTY_MD5)
            else:
                if not durable and journal is not None:  # nothing kept: the whole file is to be written
                    check_room(temp.parent, job.size, job.destination)
                marks = (
                    DurableMarks(journal, partial.fd, marked={0: durable}, chunk_size=self._config.chunk_size)
                    if journal is not None
                    else None
                )
                self._retrying()(self._stream_single, job, partial.fd, marks=marks)
        except _WORTHLESS:
            _forget(temp, journal)
            raise
        finally:
            os.close(partial.fd)
            if journal is not None:
                journal.close()
        self._install(job, temp)
        if journal is not None:
            journal.remove()
        job.on_done(None)

    def _open_partial(
        self, temp: Path, journal: Optional[ResumeJournal], *, fresh: bool = False
    ) -> Tuple[WriteTarget, int]:
        """The partial file of a single stream and the bytes of it to keep: the file its journal names when it is
        still that file (resumed), cut back to the journal's last durable mark (bytes past it were never vouched
        for); else a fresh one (:func:`~synclient.transfer.partial.open_for_write`), keeping nothing. Its journal
        is written anew, with that mark."""
        state = journal.load() if journal is not None and not fresh else None
        partial = open_for_write(temp, resume=state.partial if state is not None else None, folders=self._folders)
        durable = state.marks.get(0, 0) if state is not None and partial.resumed else 0
        try:
            if durable > partial.size:  # the mark vouches for bytes the file has not got: nothing is kept
                durable = 0
            if partial.resumed and partial.size != durable:
                os.ftruncate(partial.fd, durable)
            if journal is not None:
                journal.start(partial.identity, {0: durable} if durable else {}, folders=self._folders)
        except BaseException:
            os.close(partial.fd)
            raise
        return partial, durable

    def _stream_single(
        self, job: FileJob, fd: int, size: Optional[int] = None, *, marks: Optional[DurableMarks] = None
    ) -> None:
        """One try at the whole file into the partial file ``fd``, from what it holds (``size``: the file's, when the
        handle does not record it but the server announced it); ``marks`` journals its progress."""
        size = job.size if size is None else size
        have = os.fstat(fd).st_size
        write = _HashedWrite(fd, self._observer, job.planned, marks)
        if have > size or (have == size and not job.handle.content_md5):
            # longer is foreign data; exactly full without an MD5 to check it could be a body that ran longer
            have = job.reused = 0
            write.restart()
        try:
            hash_file_range(DirectFile(fd), 0, have, write.md5)  # what is kept is hashed from the disk
            if have < size:
                try:
                    self._fetch(job, ByteRange(have, size, size), write)
                except RangeNotHonouredError:
                    if have == 0:
                        raise
                    job.reused = 0
                    write.restart()  # the server cannot resume: take the whole body
                    self._fetch(job, ByteRange(0, size, size), write)
            self._verify(job, write.md5.hexdigest())
        except IntegrityError:
            job.reused = 0
            write.restart()  # bytes that failed a check are never reused: the next try starts clean
            raise
        except _STOPPED:
            if marks is not None:  # stopped (Ctrl-C, a cut): what reached the file is kept for the next run
                marks.advance(0, os.fstat(fd).st_size, final=True)
            raise

    def _download_unsized(self, job: FileJob) -> None:
        """A file whose handle records no size: one GET to the end of the body, checked against the MD5 when the
        handle records one. A try that was cut resumes from its offset when the server announced the length and
        takes ranges; else it starts over. A file that fails leaves no partial (no later run could trust it)."""
        temp = temp_path(job.destination, job.handle.id)
        try:
            fd = open_for_write(temp, folders=self._folders).fd  # never resumed from an earlier run
            try:
                self._retrying()(self._stream_unsized, job, fd)
            finally:
                os.close(fd)
            self._install(job, temp)
        except BaseException:
            _remove_quietly(temp)  # (also when cancelled: the next run starts over anyway)
            raise
        job.on_done(None)

    def _stream_unsized(self, job: FileJob, fd: int) -> None:
        if job.announced is not None and job.ranges:  # an earlier try learned the size and that ranges work
            self._stream_single(job, fd, size=job.announced)
            job.received = job.announced
            return
        os.ftruncate(fd, 0)
        write = _HashedWrite(fd, self._observer, job.planned)

        def learned(length: Optional[int], ranges: bool) -> None:
            job.announced, job.ranges = length, ranges

        job.received = self._fetch(job, None, write, on_head=learned)
        self._verify(job, write.md5.hexdigest())

    # -- parallel ranged parts -----------------------------------------------------------------------------------

    def _start_multipart(self, job: FileJob) -> None:
        size, part_size = job.size, self._config.part_size
        temp = temp_path(job.destination, job.handle.id)
        journal = ResumeJournal(
            journal_path(temp),
            JournalHeader(
                file_handle_id=job.handle.id, size=size, md5=job.handle.content_md5 or "", part_size=part_size
            ),
        )
        parts = plan_parts(size, part_size)
        recorded = journal.load()
        partial = open_for_write(temp, resume=recorded.partial if recorded is not None else None, folders=self._folders)
        # per part: the end of its bytes an earlier run made durable (the journal's last mark), else its start
        kept = recorded.marks if recorded is not None and partial.resumed and partial.size == size else {}
        durable = {index: max(kept.get(index, part.start), part.start) for index, part in enumerate(parts)}
        progress = {index: end for index, end in durable.items() if end > parts[index].start}
        if partial.resumed and not progress:  # ours, but nothing to continue: a fresh file, preallocated
            os.close(partial.fd)
            partial = open_for_write(temp, folders=self._folders)
        fd = partial.fd
        try:
            if not progress:
                preallocate(fd, size, job.destination)
            journal.start(partial.identity, progress, folders=self._folders)
        except BaseException as exc:
            os.close(fd)
            journal.close()
            if isinstance(exc, NoRoomForFileError):
                _forget(temp, journal)
            raise
        file = DirectFile(fd, open_direct(temp, fd) if self._config.direct_io else -1)
        finished = [index for index, end in progress.items() if end == parts[index].end]
        todo = [index for index in range(len(parts)) if durable[index] < parts[index].end]
        job.reused = sum(end - parts[index].start for index, end in progress.items())
        # +1: this task's own count, so parts finishing early cannot finalize (see Countdown)
        state = _Multipart(
            job=job,
            temp=temp,
            file=file,
            journal=journal,
            parts=parts,
            hasher=PrefixHasher(file, parts),
            resumed=bool(progress),
            countdown=Countdown(len(todo) + 1),
            marks=DurableMarks(journal, fd, marked=durable, chunk_size=self._config.chunk_size),
            written={index: end for index, end in progress.items() if index in todo},
            kept=dict(progress),
        )
        if progress:
            log.info(
                "resuming %s: %d of %d parts already on disk, %d bytes in all",
                job.entity_id,
                len(finished),
                len(parts),
                job.reused,
            )
            self._observer.bytes_reused(job.planned, job.reused)
        state.waiting.extend(todo)
        for _ in range(min(self._config.streams_per_file, len(todo))):
            self._submit_next_part(state)
        for index in sorted(progress):  # the kept bytes are hashed from the disk, never taken on trust
            state.hasher.advance(index, progress[index])
        if state.countdown.count_down():
            self._finish_multipart(state)

    def _submit_next_part(self, state: _Multipart) -> None:
        """Parts go to the pool a few at a time (``streams_per_file``), each finished part submitting the next, so
        one large file neither takes every worker nor has all its parts half-written at once (the MD5 follows the
        written prefix, and a narrow window keeps that prefix moving)."""
        with state.lock:
            if not state.waiting:
                return
            index = state.waiting.popleft()
        self._pool.submit(Priority.PART, self._run_part, state, index)

    def _run_part(self, state: _Multipart, index: int) -> None:
        try:
            with reporting_failures(state.fail, state.job.destination):
                if state.error is None and not self._pool.cancel_event.is_set():
                    try:
                        self._retrying()(self._fetch_part, state, index)
                    except _STOPPED:  # (Ctrl-C, tries spent): what reached the file is kept for the next run
                        state.marks.advance(index, state.written.get(index, state.parts[index].start), final=True)
                        raise
                    state.marks.advance(index, state.parts[index].end, final=True)
                    state.hasher.part_done(index)
        except Cancelled:
            state.cancelled = True
        finally:
            if self._pool.cancel_event.is_set():
                state.cancelled = True
            self._submit_next_part(state)
            if state.countdown.count_down():
                self._finish_multipart(state)

    def _fetch_part(self, state: _Multipart, index: int) -> None:
        """One try at a part; a retry after a cut or stall continues from the part's last written byte (the first
        try, from where an earlier run's journal marked it durable)."""
        file, part, marks = state.file, state.parts[index], state.marks
        written = state.written.get(index, part.start)

        def sink(offset: int, data: memoryview) -> None:
            file.write(data, offset)
            end = offset + len(data)
            state.written[index] = end
            marks.advance(index, end)
            state.hasher.advance(index, end)
            self._observer.bytes_transferred(state.job.planned, len(data))

        try:
            self._fetch(state.job, ByteRange(written, part.end, part.total), sink)
        except RangeNotHonouredError:
            if written == part.start:
                raise
            with state.lock:  # a sub-range was refused: the whole part, then (nothing of it is kept)
                state.job.reused -= state.kept.pop(index, part.start) - part.start
            marks.reset(index, part.start)
            state.written[index] = part.start
            self._fetch(state.job, part, sink)

    def _finish_multipart(self, state: _Multipart) -> None:
        job = state.job
        try:
            with reporting_failures(job.on_done, job.destination):
                if state.cancelled:
                    return  # partial file and journal stay for the next run
                if isinstance(state.error, RangeNotHonouredError):
                    log.info("%s: storage does not honour Range; fetching in one stream", job.entity_id)
                    self._discard(state)
                    self._download_single(job, fresh=True)
                    return
                if state.error is not None:
                    if isinstance(state.error, IntegrityError):
                        self._discard(state)
                    job.on_done(state.error)
                    return
                try:
                    self._verify(job, state.hasher.hexdigest())
                except IntegrityError as exc:
                    self._discard(state)
                    if state.resumed:  # the earlier run's parts were not what we thought: start over once
                        log.warning("%s: resumed parts failed verification; downloading again", job.entity_id)
                        self._start_multipart(job)
                    elif job.verify_retries < MULTIPART_VERIFY_RETRIES:
                        # One bad part (a flipped byte on the way) spoils the whole-file MD5, and nothing says which
                        # part it was: fetch the file again, a bounded number of times, as a small file's stream is.
                        job.verify_retries += 1
                        log.warning(
                            "%s: %s; downloading again (%d of %d)",
                            job.entity_id,
                            exc,
                            job.verify_retries,
                            MULTIPART_VERIFY_RETRIES,
                        )
                        self._start_multipart(job)
                    else:
                        job.on_done(exc)
                    return
                state.file.close()
                self._install(job, state.temp)
                state.journal.remove()
                job.on_done(None)
        finally:
            state.file.close()
            state.journal.close()

    def _discard(self, state: _Multipart) -> None:
        state.file.close()
        state.journal.remove()
        try:
            state.temp.unlink()
        except FileNotFoundError:
            pass
