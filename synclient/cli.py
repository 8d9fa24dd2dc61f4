"""The ``synclient`` command line: a thin layer over the library that maps outcomes to exit codes.

Exit codes: 0 all good, 1 some files failed (or the platform kept failing), 2 usage / configuration /
authentication / bad or unknown id / wrong endpoint / unusable target / target locked, 130 interrupted. Errors are
one line on stderr, never showing a token or a URL's credentials (every channel passes
:func:`synclient.redaction.redact`); ``-v`` adds the traceback. With ``--json``, stdout
carries exactly one JSON object (also on errors), and nothing else.
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import getpass
import json
import logging
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from synclient._version import __version__
from synclient.errors import (
    AccessDeniedError,
    AuthenticationError,
    BadRequestError,
    ConfigError,
    EndpointError,
    KeyringUnavailableError,
    LocalIOError,
    MalformedAnswerError,
    NotFoundError,
    SyncError,
    SynclientError,
    SyncLockedError,
    TargetError,
    UnsafePathError,
)
from synclient.platform.credentials import (
    ResolvedToken,
    clean_token,
    delete_token,
    endpoint_source,
    find_token,
    resolve_endpoints,
    resolve_profile,
    store_token,
)
from synclient.platform.models import EntityHeader, EntityType, parse_entity_id
from synclient.platform.rest import Platform
from synclient.progress import progress_observer
from synclient.redaction import REDACTED, install_redaction, redact, redact_data, register_secret, visible  # noqa: F401
from synclient.results import REPAIRED, FileResult, SyncReport, SyncResults, counted
from synclient.sync.options import OnError, SyncOptions
from synclient.sync.plan.dry_run import SyncPlan
from synclient.sync.plan.planner import Collision
from synclient.sync.records.manifest import ManifestFormat, ManifestMode
from synclient.sync.sources.id_lists import EntityRef, parse_refs, read_id_file
from synclient.sync.sources.queries import looks_like_sql, table_of
from synclient.transfer.cap import CutoffMode
from synclient.transfer.config import TransferConfig
from synclient.units import format_size, parse_size

log = logging.getLogger("synclient.cli")


class ExitCode(enum.IntEnum):
    OK = 0
    FILES_FAILED = 1  # the run happened, but some files (or the platform) failed
    USAGE = 2  # the user must fix something: arguments, configuration, token, id, access
    TRANSFER_CAP = 8  # --max-transfer reached with files left (rclone's 8): run the same command again to go on
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)


class CliError(Exception):
    """An outcome the CLI reports as one line with a chosen exit code."""

    def __init__(self, message: str, code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.code = code


# -- output ---------------------------------------------------------------------------------------------------------


@dataclass
class Output:
    """Where each kind of output goes: results to stdout (or one JSON object), everything else to stderr."""

    json_mode: bool = False
    quiet: bool = False
    verbose: int = 0
    json_document: Dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def redact(text: str) -> str:
        """Every channel's text passes here: :func:`synclient.redaction.redact` (URL credentials and queries,
        the tokens synclient was given, anything shaped like a token); lines for a terminal then pass
        :func:`synclient.redaction.visible` (a remote name's control characters are shown, never acted on)."""
        return redact(text)

    def result(self, line: str = "") -> None:
        """A line of the command's result (suppressed in JSON mode, where the document carries it)."""
        if not self.json_mode:
            print(visible(self.redact(line)), flush=True)

    def info(self, line: str) -> None:
        """Narration for humans, on stderr; silenced by -q."""
        if not self.quiet:
            print(visible(self.redact(line)), file=sys.stderr, flush=True)

    def error(self, message: str) -> None:
        print(f"synclient: error: {visible(_one_line(self.redact(message)))}", file=sys.stderr, flush=True)

    def failure(self, line: str) -> None:
        """One failed file (or a count of more), on stderr, redacted like errors."""
        print(f"synclient: {visible(_one_line(self.redact(line)))}", file=sys.stderr)

    def emit_json(self, exit_code: ExitCode) -> None:
        if self.json_mode:
            self.json_document["exit_code"] = int(exit_code)
            document = redact_data(json.loads(json.dumps(self.json_document, default=str)))  # every string
            sys.stdout.write(json.dumps(document, indent=2) + "\n")
            sys.stdout.flush()


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# -- the parser -----------------------------------------------------------------------------------------------------

COLLISION_MODES = tuple(mode.value for mode in Collision)
MANIFEST_MODES = tuple(mode.value for mode in ManifestMode)
MANIFEST_FORMATS = tuple(fmt.value for fmt in ManifestFormat) + ("both",)


def _size(text: str) -> int:
    """``--max-transfer``'s value: ``10G``, ``500M``, ``512b`` (binary units; alone, a number is KiB)."""
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


#: the global options that say which platform to reach and as whom (``demo`` takes none: it brings its own)
CONNECTION_OPTIONS = ("--endpoint", "--token", "--profile", "--ca-bundle")


def _add_global_options(parser: argparse.ArgumentParser, *, in_subcommand: bool, connection: bool = True) -> None:
    """Global options work before or after the command; in a subcommand they only override what was given.
    ``connection=False``: only the output options (a command that reaches no platform of the user's)."""
    unset: Any = argparse.SUPPRESS if in_subcommand else None
    group = parser.add_argument_group("global options")
    if connection:
        _add_connection_options(group, unset)
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=unset if in_subcommand else False,
        help="no progress and no narration; only results and errors",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=unset if in_subcommand else 0,
        help="log what happens (-vv: debug) and show tracebacks of errors",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=unset if in_subcommand else False,
        help="print exactly one JSON object on stdout (report and per-file results)",
    )


def _add_connection_options(group: Any, unset: Any) -> None:
    """Which platform, as whom: ``--endpoint``, ``--token``, ``--profile``, ``--ca-bundle``."""
    group.add_argument(
        "--endpoint",
        metavar="URL",
        default=unset,
        help="platform service root, e.g. http://127.0.0.1:8080; a trailing /repo/v1 (what whoami prints), "
        "/file/v1 or /auth/v1 is accepted (default: SYNCLIENT_ENDPOINT, the same way; ~/.synapseConfig "
        "[endpoints], else Synapse production)",
    )
    group.add_argument(
        "--token",
        metavar="TOKEN",
        default=unset,
        help="personal access token (default: SYNCLIENT_AUTH_TOKEN, SYNAPSE_AUTH_TOKEN, "
        "~/.synapseConfig, then the keyring entry saved by 'synclient login')",
    )
    group.add_argument(
        "--profile",
        metavar="NAME",
        default=unset,
        help="profile: the [profile NAME] section of ~/.synapseConfig and the keyring entry NAME "
        "(default: SYNCLIENT_PROFILE, SYNAPSE_PROFILE, else 'default')",
    )
    group.add_argument(
        "--ca-bundle",
        metavar="PATH",
        default=unset,
        help="CA certificates (PEM file or hashed folder) that REST and storage hosts must chain to "
        "(default: REQUESTS_CA_BUNDLE, SSL_CERT_FILE, CURL_CA_BUNDLE, ~/.synapseConfig "
        "[synclient] ca_bundle, else certifi's bundle)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="synclient",
        description="Mirror projects of a Synapse-compatible data platform to local disk, fast and safely.",
        epilog="exit codes: 0 ok, 1 some files failed, 2 usage/config/auth/endpoint error, 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"synclient {__version__}")
    _add_global_options(parser, in_subcommand=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    def command(
        name: str,
        help_text: str,
        handler: Callable[[CommandContext], ExitCode],
        *,
        connection: bool = True,
        description: str = "",
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=description or help_text)
        _add_global_options(sub, in_subcommand=True, connection=connection)
        sub.set_defaults(handler=handler)
        return sub

    get = command(
        "get",
        "download files, projects or folders (those need -r), datasets, a list of ids, or what a query selects",
        cmd_get,
    )
    get.add_argument(
        "ids",
        metavar="ID",
        nargs="*",
        help="entity ids, e.g. syn123, or syn123.4 for version 4 of a file; several ids are one run",
    )
    get.add_argument(
        "--from-file",
        metavar="FILE",
        help="read ids from FILE ('-': standard input): one per line ('#' comments), or a CSV/TSV "
        "with an 'id' column such as a manifest, the download cart's manifest or a saved query result; "
        "its versionNumber column pins each file's version and its dataFileMD5Hex/dataFileSizeBytes columns "
        "fail a file whose content differs (see docs/cli.md)",
    )
    get.add_argument(
        "--query",
        metavar="SQL",
        help='download the files a query over a file view or table selects: "SELECT id FROM syn123 '
        'WHERE ..." (its id column; a currentVersion column pins versions)',
    )
    get.add_argument(
        "--download-list",
        action="store_true",
        help="download every available file of your download cart (the Download Cart of synapse.org), each at "
        "the version it was added at, flat into --path with a manifest.csv; the files that succeeded are then "
        "removed from the cart (see docs/cli.md)",
    )
    get.add_argument(
        "--keep-cart",
        action="store_true",
        help="with --download-list: leave the download cart as it is (remove nothing from it)",
    )
    get.add_argument(
        "--view",
        metavar="ID",
        help="a file view over what is downloaded (syn456): its rows stand in for one REST call per "
        "file (a first sync of N files takes about N/100 calls instead of N); or 'auto' (with -r): synclient "
        "makes a temporary file view of the tree in a project of your own when it pays, and deletes it "
        "(this creates and deletes entities in your account; see docs/cli.md)",
    )
    get.add_argument(
        "--scratch-project",
        metavar="ID",
        help="with --view auto: the project the temporary view is made in (default: your own project "
        "synclient-scratch-<your user id>, found or created, and removed again when empty)",
    )
    get.add_argument(
        "--version",
        dest="file_version",
        metavar="N",
        type=_positive_int,
        help="version N of the one file ID (as syn123.N)",
    )
    get.add_argument("-r", "--recursive", action="store_true", help="download projects and folders recursively")
    get.add_argument("--path", metavar="DIR", default=".", help="local directory to sync into (default: .)")
    get.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="fetch on a Dask cluster: a scheduler's address "
        "(tcp://host:8786) or scheduler file, or local:N for N worker processes on this machine; this "
        "process plans and indexes, the workers fetch (pip install 'synclient[dask]'; docs/dask.md)",
    )
    get.add_argument(
        "--max-workers",
        metavar="N",
        type=_positive_int,
        help=f"threads of the shared transfer pool (default: {TransferConfig().max_workers})",
    )
    get.add_argument(
        "--bwlimit",
        metavar="RATE",
        help="bandwidth limit of all downloads together, as rclone's: 10M (MiB/s), 512k, off, or a timetable in "
        "local time such as '08:00,10M 18:00,off' (per process: on --dask, per worker; see docs/cli.md)",
    )
    get.add_argument(
        "--if-collision",
        metavar="MODE",
        choices=COLLISION_MODES,
        help="when a local file differs: "
        + ", ".join(COLLISION_MODES)
        + f" (default: {SyncOptions().if_collision.value})",
    )
    get.add_argument(
        "--checksum",
        action="store_true",
        help="hash the local copies synclient wrote instead of trusting size and mtime, and download again those "
        "whose bytes differ (reported as repair; slower: every local byte is read)",
    )
    get.add_argument(
        "--max-transfer",
        metavar="SIZE",
        type=_size,
        help="stop after SIZE downloaded in this run (10G, 500M: binary units); the files left are counted, their "
        "partials kept, and the exit code is 8: run the same command again to go on",
    )
    get.add_argument(
        "--cutoff-mode",
        metavar="MODE",
        choices=[mode.value for mode in CutoffMode],
        help="at the --max-transfer cap: hard (default: stop every transfer), soft (start no new file, finish the "
        "running ones) or cautious (start no file that would pass the cap)",
    )
    get.add_argument("--include", metavar="GLOB", action="append", help="only remote paths matching GLOB (repeatable)")
    get.add_argument("--exclude", metavar="GLOB", action="append", help="skip remote paths matching GLOB (repeatable)")
    _size_age_arguments(get)
    get.add_argument(
        "--order-by",
        metavar="ORDER",
        help="the order downloads start among those ready at once: size, name or modtime, then ,ascending (the "
        "default) or ,descending (rclone's format; default: the order files come)",
    )
    get.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (what would be downloaded, skipped, deleted) and change nothing",
    )
    get.add_argument(
        "--delete", action="store_true", help="remove local files that synclient wrote and that are gone remotely"
    )
    get.add_argument(
        "--manifest",
        choices=MANIFEST_MODES,
        help="where to write the manifests: all folders, the root only, or nowhere",
    )
    get.add_argument(
        "--manifest-format",
        choices=MANIFEST_FORMATS,
        help="which manifests: tsv (SYNAPSE_METADATA_MANIFEST.tsv), csv (manifest.csv) or both "
        "(default, as synapseclient 4.14)",
    )
    get.add_argument("--follow-links", action="store_true", help="follow Link entities to their targets")
    get.add_argument(
        "--keep-paths",
        action="store_true",
        help="a list's files (several ids, --from-file, --query, a dataset or collection) land at their remote "
        "paths, <project name>/<folder path>/<name> under --path, as a sync of their project into "
        "--path/<project name> places them (see docs/cli.md)",
    )
    get.add_argument(
        "--provenance",
        action="store_true",
        help="fetch provenance for the manifest's used/executed columns (one REST call per file)",
    )
    get.add_argument("--no-progress", action="store_true", help="no progress bar (also: SYNCLIENT_DISABLE_PROGRESS=1)")
    get.add_argument(
        "--no-synapse-cache",
        dest="synapse_cache",
        action="store_false",
        help="neither copy files from synapseclient's download cache (~/.synapseCache) nor record them there",
    )
    get.add_argument(
        "--synapse-cache-link",
        action="store_true",
        help="hard-link files found in synapseclient's cache instead of copying them (the two names are "
        "then one file: a change to either changes both)",
    )

    check = command(
        "check",
        "compare a local copy with the remote files a get would put there (MD5 and size; nothing is written)",
        cmd_check,
    )
    check.add_argument("ids", metavar="ID", nargs="*", help="what get would download: entity ids (syn123, syn123.4)")
    check.add_argument("--from-file", metavar="FILE", help="read ids from FILE, as get does")
    check.add_argument("--query", metavar="SQL", help="the files a query selects, as get --query")
    check.add_argument("-r", "--recursive", action="store_true", help="projects and folders recursively")
    check.add_argument("--path", metavar="DIR", default=".", help="the local copy to check (default: .)")
    check.add_argument("--size-only", action="store_true", help="compare sizes only: no hashing")
    check.add_argument("--include", metavar="GLOB", action="append", help="only remote paths matching GLOB")
    check.add_argument("--exclude", metavar="GLOB", action="append", help="skip remote paths matching GLOB")
    _size_age_arguments(check)
    check.add_argument("--follow-links", action="store_true", help="follow Link entities to their targets")
    check.add_argument(
        "--max-workers", metavar="N", type=_positive_int, help="threads of the shared pool that plans the check"
    )
    check.add_argument("--no-progress", action="store_true", help="no bar of the bytes hashed")
    check.set_defaults(file_version=None)

    ls = command("ls", "list a project or folder (a tree with -r, sizes with -l)", cmd_ls)
    ls.add_argument("id", metavar="ID", help="entity id, e.g. syn123")
    ls.add_argument("-r", "--recursive", action="store_true", help="list sub-folders too, as a tree")
    ls.add_argument(
        "-l", "--long", action="store_true", help="show sizes and versions (a call per file, one per folder)"
    )

    command("login", "validate a personal access token and store it in the keyring", cmd_login)
    command("logout", "remove the token stored by 'synclient login'", cmd_logout)
    command("whoami", "show the user the current token belongs to, and where the token came from", cmd_whoami)

    demo_help = "run a local platform emulator and sync a demo project twice (no network)"
    demo = command(
        "demo",
        demo_help,
        cmd_demo,
        connection=False,
        description=f"{demo_help}. The demo reaches its own emulator with its own token: it takes none of "
        f"{', '.join(CONNECTION_OPTIONS)}, and never reads or writes your token, config or keyring.",
    )
    demo.add_argument(
        "--path",
        metavar="DIR",
        default="synclient-demo",
        help="where to put the demo files (default: ./synclient-demo)",
    )
    demo.add_argument("--small", action="store_true", help="a tiny demo project (a few dozen small files)")
    demo.add_argument("--max-workers", metavar="N", type=_positive_int, help="threads of the shared transfer pool")
    demo.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


# -- shared command plumbing -----------------------------------------------------------------------------------------


@dataclass
class CommandContext:
    args: argparse.Namespace
    out: Output
    _token: Optional[ResolvedToken] = None
    _token_resolved: bool = False

    @property
    def profile(self) -> str:
        return resolve_profile(self.args.profile)

    @property
    def token(self) -> Optional[ResolvedToken]:
        if not self._token_resolved:
            self._token = find_token(self.args.token, profile=self.args.profile)
            self._token_resolved = True
        return self._token

    def platform(self, *, max_connections: int = 64, token: Optional[str] = None) -> Platform:
        # The token is resolved here (not inside Platform) so error messages can say where it came from.
        resolved = token or (self.token.token if self.token else None)
        endpoints = resolve_endpoints(self.args.endpoint)
        return Platform(
            repo_endpoint=endpoints.repo,
            file_endpoint=endpoints.file,
            auth_endpoint=endpoints.auth,
            token=resolved or None,
            profile=self.args.profile,
            max_connections=max_connections,
            ca_bundle=self.args.ca_bundle,
        )

    def want_progress(self) -> bool:
        return not (self.out.quiet or getattr(self.args, "no_progress", False))


def _explain(exc: BaseException, ctx: Optional[CommandContext]) -> CliError:
    """Turn a library error into the one line a user needs, with the exit code it deserves."""
    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, AuthenticationError):
        token = ctx.token if ctx else None
        if token is None:
            return CliError(
                "the platform requires a login and no access token was found: run 'synclient login', "
                "or set SYNCLIENT_AUTH_TOKEN to a personal access token"
            )
        return CliError(
            f"the access token from {token.describe()} was rejected (invalid or expired): create a new "
            f"personal access token, then run 'synclient login' or set SYNCLIENT_AUTH_TOKEN to it"
        )
    if isinstance(exc, NotFoundError):
        return CliError(f"not found: {_reason_or(exc)} (check the id; it may not exist or may have been deleted)")
    if isinstance(exc, AccessDeniedError):
        if ctx is not None and ctx.token is None:  # the platform answered for its anonymous user
            return CliError(
                f"access denied: {_reason_or(exc)} (no access token was found, so the platform "
                f"answered as an anonymous user: run 'synclient login', or set SYNCLIENT_AUTH_TOKEN "
                f"to a personal access token)"
            )
        return CliError(f"access denied: {_reason_or(exc)} (this user may not read it; see 'synclient whoami')")
    if isinstance(exc, EndpointError):
        return CliError(f"{exc} (the endpoint comes from {endpoint_source(ctx.args.endpoint if ctx else None)})")
    if isinstance(exc, (ConfigError, UnsafePathError, SyncLockedError, TargetError)):
        return CliError(str(exc))
    if isinstance(exc, SynclientError):
        return CliError(str(exc), ExitCode.FILES_FAILED)
    if isinstance(exc, OSError):
        return CliError(f"{exc.__class__.__name__}: {exc}", ExitCode.FILES_FAILED)
    return CliError(
        f"internal error: {exc.__class__.__name__}: {exc} (run with -v for the traceback)", ExitCode.FILES_FAILED
    )


def _reason_or(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    url = getattr(exc, "url", None)
    return f"{reason} ({url})" if reason and url else reason or str(exc)


def _entity_id(text: str) -> str:
    """Validate an id early so a typo is a usage error, not a network round trip."""
    entity_id, _version = parse_entity_id(text)
    return entity_id


def _check_target(path: Path) -> None:
    """``--path`` must be a directory or not exist yet: say so before any network call."""
    if path.exists() and not path.is_dir():
        raise TargetError(
            f"the target path cannot be used: {path} exists as a file; give --path a directory "
            f"(it is created when missing)"
        )


def _require_token(ctx: CommandContext) -> ResolvedToken:
    if ctx.token is None:
        raise CliError(
            "not logged in: run 'synclient login', set SYNCLIENT_AUTH_TOKEN, or add authtoken to ~/.synapseConfig"
        )
    return ctx.token


def _size_age_arguments(parser: argparse.ArgumentParser) -> None:
    """rclone's size and age filters (filters.py), on get and check alike."""
    parser.add_argument("--min-size", metavar="SIZE", help="only files of at least SIZE (100k, 1G: binary units)")
    parser.add_argument("--max-size", metavar="SIZE", help="only files of at most SIZE (100k, 1G: binary units)")
    parser.add_argument(
        "--min-age", metavar="AGE", help="only files modified AGE ago or earlier (30m, 2h, 7d, 1w, 1M, 1y; or a date)"
    )
    parser.add_argument(
        "--max-age", metavar="AGE", help="only files modified within AGE (30m, 2h, 7d, 1w, 1M, 1y; or since a date)"
    )


# -- get ------------------------------------------------------------------------------------------------------------


def _sync_options(args: argparse.Namespace, *, plan_progress: bool = False) -> SyncOptions:
    """The sync's options from the flags (the CLI draws its own progress, and reports failures itself; a dry run's
    progress line is the library's: ``plan_progress``)."""
    defaults = SyncOptions()
    return SyncOptions(
        if_collision=args.if_collision or defaults.if_collision,
        delete=args.delete,
        manifest=args.manifest or defaults.manifest,
        include=args.include or (),
        exclude=args.exclude or (),
        dry_run=args.dry_run,
        follow_links=args.follow_links,
        provenance=args.provenance,
        on_error=OnError.CONTINUE,
        progress=plan_progress and args.dry_run,
        manifest_formats=(
            args.manifest_format if args.manifest_format not in (None, "both") else defaults.manifest_formats
        ),
        synapse_cache=args.synapse_cache,
        synapse_cache_link=args.synapse_cache_link,
        checksum=getattr(args, "checksum", False),
        keep_paths=getattr(args, "keep_paths", False),
        max_transfer=getattr(args, "max_transfer", None),
        cutoff_mode=getattr(args, "cutoff_mode", None) or CutoffMode.HARD,
        min_size=args.min_size,
        max_size=args.max_size,
        min_age=args.min_age,
        max_age=args.max_age,
        order_by=args.order_by,
    )


def _requested_ids(args: argparse.Namespace) -> List[EntityRef]:
    """The ids of ``get``: on the command line and from ``--from-file``, ``--version`` applied to the one id."""
    for text in args.ids:
        if args.verbose and _whole_number(text):
            raise CliError(_verbose_not_version(text))
        if looks_like_sql(text):
            raise CliError(
                f'{_one_line(text)!r} is a query, not an id: pass it with --query "SELECT ..." (-q means quiet)'
            )
    refs = parse_refs(args.ids)
    if args.from_file:
        try:
            refs += read_id_file(args.from_file)
        except LocalIOError as exc:
            raise CliError(str(exc)) from None
    if not refs:
        raise CliError("get needs an id (syn123), several, or --from-file FILE")
    if args.file_version is not None:
        if len(refs) != 1 or args.from_file:
            raise CliError("--version applies to one file id; give each id its version instead (syn123.4)")
        if refs[0].version not in (None, args.file_version):
            raise CliError(f"{refs[0]} and --version {args.file_version} name different versions")
        refs = [EntityRef(refs[0].entity_id, args.file_version)]
    return refs


def cmd_get(ctx: CommandContext) -> ExitCode:
    from synclient.sync.runner import ReportBaseline, RunSettings, download_many, sync_source
    from synclient.sync.sources.resolve import resolve_entity

    args = ctx.args
    if args.download_list:
        return _get_download_list(ctx)
    if args.keep_cart:
        raise CliError("--keep-cart goes with --download-list")
    if args.query is not None:
        return _get_query(ctx)
    refs = _requested_ids(args)
    view = args.view  # (validated by the run: an id without a version, or auto)
    if args.scratch_project is not None and view != "auto":
        raise CliError("--scratch-project is where --view auto makes its view: give it with --view auto")
    options = _sync_options(args, plan_progress=ctx.want_progress())
    path = Path(args.path)
    _check_target(path)
    _check_dask(args)
    # (--keep-paths: even one id is a list, placed at its remote path; a project or folder alone is refused)
    one = refs[0] if len(refs) == 1 and not args.from_file and not args.keep_paths else None
    ctx.out.json_document.update({"command": "get", "path": str(path.resolve())})
    ctx.out.json_document.update({"entity": str(one)} if one else {"entities": [str(ref) for ref in refs]})
    config = _transfer_config(ctx)
    workers = args.max_workers or TransferConfig().max_workers
    with ctx.platform(max_connections=workers) as platform:
        source = None
        if one is not None:
            # the run's one header call for its root (its calls count from here): checked against the flags, then
            # resolved into the run's source
            baseline = ReportBaseline.start(platform)
            root = platform.get_entity_header(one.entity_id)
            if root.type.is_container and not args.recursive:
                raise CliError(f"{one.entity_id} is a {root.type.label}; pass -r to download it recursively")
            if root.type.is_queryable:
                raise CliError(
                    f"{one.entity_id} is a {root.type.label}: select its files with "
                    f'--query "SELECT id FROM {one.entity_id} WHERE ..."'
                )
            source = resolve_entity(platform, one, header=root)
            description = root.name
        else:
            description = counted(len(refs), "id")
        with _dask_for(args) as dask:
            observer = progress_observer(enabled=ctx.want_progress() and not args.dry_run, description=description)
            try:
                if source is not None:
                    settings = RunSettings.of(
                        options,
                        config=config,
                        max_workers=args.max_workers,
                        observer=observer,
                        view=view,
                        scratch_project=args.scratch_project,
                        dask=dask,
                    )
                    outcome = sync_source(source, path, platform=platform, settings=settings, baseline=baseline)
                else:
                    outcome = download_many(
                        refs,
                        path,
                        recursive=args.recursive,
                        platform=platform,
                        config=config,
                        max_workers=args.max_workers,
                        options=options,
                        observer=observer,
                        view=view,
                        dask=dask,
                    )
            finally:
                observer.close()
    if isinstance(outcome, SyncPlan):  # (a dry run's)
        return _report_plan(ctx, outcome)
    return _report_sync(ctx, outcome)


def _get_query(ctx: CommandContext) -> ExitCode:
    """``get --query SQL``: what the query selects, as a list of ids is downloaded."""
    from synclient.sync.runner import download_query

    args = ctx.args
    if args.ids or args.from_file or args.file_version is not None:
        raise CliError("--query selects the files itself: give no ids, --from-file or --version with it")
    if args.view is not None:
        raise CliError("--view is for ids; a query over a file view already reads its rows")
    if args.delete:
        raise CliError("--delete needs one project or folder to mirror; a query's files are never deleted")
    sql = args.query
    table_of(sql)  # a query that names no table is a usage error before any call
    path = Path(args.path)
    _check_target(path)
    _check_dask(args)
    ctx.out.json_document.update({"command": "get", "path": str(path.resolve()), "query": sql})
    config = _transfer_config(ctx)
    workers = args.max_workers or TransferConfig().max_workers
    with ctx.platform(max_connections=workers) as platform, _dask_for(args) as dask:
        observer = progress_observer(enabled=ctx.want_progress() and not args.dry_run, description="query")
        try:
            outcome = download_query(
                sql,
                path,
                recursive=args.recursive,
                platform=platform,
                config=config,
                max_workers=args.max_workers,
                options=_sync_options(args, plan_progress=ctx.want_progress()),
                observer=observer,
                dask=dask,
            )
        except BadRequestError as exc:
            if "/table/query" not in (exc.url or ""):
                raise
            raise CliError(f"the platform refused the query: {exc.reason or exc}") from None  # the user's SQL
        finally:
            observer.close()
    if isinstance(outcome, SyncPlan):  # (a dry run's)
        return _report_plan(ctx, outcome)
    return _report_sync(ctx, outcome)


def _get_download_list(ctx: CommandContext) -> ExitCode:
    """``get --download-list``: the download cart's available files, then its manifest and its succeeded items
    removed (``--keep-cart``: none); a line on the files that need an action on synapse.org first."""
    from synclient.sync.download_cart import download_list

    args = ctx.args
    if args.ids or args.from_file or args.query is not None or args.file_version is not None:
        raise CliError("--download-list downloads your download cart: give no ids, --from-file, --query or --version")
    if args.view is not None or args.delete:
        raise CliError("--download-list takes no --view or --delete: the cart's own rows describe its files")
    path = Path(args.path)
    _check_target(path)
    _check_dask(args)
    _require_token(ctx)
    ctx.out.json_document.update({"command": "get", "path": str(path.resolve()), "download_list": True})
    config = _transfer_config(ctx)
    workers = args.max_workers or TransferConfig().max_workers
    with ctx.platform(max_connections=workers) as platform, _dask_for(args) as dask:
        observer = progress_observer(enabled=ctx.want_progress() and not args.dry_run, description="download cart")
        try:
            outcome = download_list(
                path,
                keep_cart=args.keep_cart,
                platform=platform,
                config=config,
                max_workers=args.max_workers,
                options=_sync_options(args, plan_progress=ctx.want_progress()),
                observer=observer,
                dask=dask,
            )
        finally:
            observer.close()
    if isinstance(outcome, SyncPlan):  # (a dry run's: the cart is left as it is)
        code = _report_plan(ctx, outcome)
        ctx.out.info("dry run: nothing was removed from your download cart")
        return code
    cart = outcome.report.cart
    if cart is not None and cart.files == 0 and not outcome.failures:
        line = cart.action_line()
        ctx.out.result("your download cart has no file to download" + (f"; {line}" if line else ""))
        ctx.out.json_document.update({"report": outcome.report.to_json(), "files": []})
        return ExitCode.OK
    code = _report_sync(ctx, outcome)
    if cart is not None:
        if cart.manifest:
            ctx.out.info(f"manifest: {cart.manifest}")
        kept = f", {counted(cart.kept, 'item')} left in it" if cart.kept else ""
        ctx.out.info(
            "download cart: kept as it is (--keep-cart)"
            if args.keep_cart
            else f"download cart: {counted(cart.removed, 'item')} removed{kept}"
        )
        line = cart.action_line()
        if line:
            ctx.out.info(line)
    return code


def _transfer_config(ctx: CommandContext) -> Optional[TransferConfig]:
    """``--bwlimit`` checked (bad syntax: one line, exit 2) and said in ``--json``; None: the defaults."""
    text = ctx.args.bwlimit
    ctx.out.json_document["bwlimit"] = text
    if text is None:
        return None
    try:
        return TransferConfig(bwlimit=text)
    except ConfigError as exc:
        raise CliError(f"--{exc}") from None


def _check_dask(args: argparse.Namespace) -> None:
    """``--dask``: Dask installed, ``local:N`` well formed, a scheduler file readable: said before any call."""
    if args.dask is not None and getattr(args, "max_transfer", None) is not None:
        raise CliError("--max-transfer counts this process's downloads; it cannot be used with --dask")
    if args.dask is not None and not args.dry_run:
        from synclient.cluster.connect import check_spec

        check_spec(args.dask)


def _dask_for(args: argparse.Namespace) -> ContextManager[Optional[object]]:
    """``--dask``: the client of the cluster that fetches (None: this process fetches); a dry run needs none."""
    if args.dask is None or args.dry_run:
        return contextlib.nullcontext()
    from synclient.cluster.connect import dask_client

    return dask_client(args.dask)


def _report_plan(ctx: CommandContext, plan: SyncPlan) -> ExitCode:
    ctx.out.json_document.update({"dry_run": True, "plan": plan.to_json()})
    failures = plan.failures  # entities that could not even be planned
    _print_failures(ctx, failures)
    for line in plan.renamed:
        ctx.out.info(f"renamed: {line}")
    ctx.out.result(plan.summary())
    return ExitCode.FILES_FAILED if failures else ExitCode.OK


def _report_sync(ctx: CommandContext, results: SyncResults) -> ExitCode:
    report: SyncReport = results.report
    ctx.out.json_document.update({"report": report.to_json(), "files": [r.to_json() for r in results]})
    _print_failures(ctx, results.failures)
    for problem in report.manifest_errors:
        ctx.out.failure(problem)
    for line in report.renamed:
        ctx.out.info(f"renamed: {line}")
    for repaired in (r for r in results if r.action == REPAIRED):  # (get --checksum; a handle without MD5: size)
        ctx.out.info(f"repaired: {repaired.path}: local {'MD5' if repaired.md5 else 'size'} differed")
    if report.query is not None:
        query = report.query
        ctx.out.info(
            f"query: {counted(query.rows, 'row')} of {query.table} named "
            f"{counted(query.entities, 'entity', 'entities')}"
            + (f" ({counted(query.rows_without_id, 'row')} without an id)" if query.rows_without_id else "")
        )
    for counts in report.workers:
        ctx.out.info(
            f"worker {counts.worker}: {counted(counts.shards, 'shard')}, {counted(counts.files, 'file')}, "
            f"{format_size(counts.bytes)} in {counts.seconds:.1f} s ({counts.cpu_seconds:.1f} CPU s), "
            f"{counted(counts.rest_calls, 'REST call')}"
        )
    ctx.out.result(report.summary())
    cap = report.cap_line()  # (--max-transfer) files left for the next run: not failures
    if cap is not None:
        ctx.out.result(cap)
    if results.failures or report.manifest_errors:
        return ExitCode.FILES_FAILED
    return ExitCode.TRANSFER_CAP if cap is not None else ExitCode.OK


def _print_failures(ctx: CommandContext, failures: Sequence[FileResult], *, shown: int = 20) -> None:
    for failure in failures[:shown]:
        where = f" {failure.path}" if failure.path is not None else ""
        ctx.out.failure(f"failed: {failure.entity_id}{where}: {failure.error}")
    if len(failures) > shown:
        ctx.out.failure(f"... and {counted(len(failures) - shown, 'more failure')} (see --json for all)")


# -- ls -------------------------------------------------------------------------------------------------------------


@dataclass
class TreeEntry:
    header: EntityHeader
    depth: int
    path: str
    size: Optional[int] = None  # files: content size (with -l); folders: the bytes of every file below them
    version: Optional[int] = None
    #: a folder listed with -l: the bytes of the files right inside it (its listing's ``sumFileSizesBytes``)
    file_bytes: Optional[int] = None
    sum_problem: Optional[str] = None  # why that listing's sum was not read (a malformed value)
    listed: bool = False  # a folder whose children are entries too

    def to_json(self) -> Dict[str, Any]:
        return {
            "id": self.header.id,
            "name": self.header.name,
            "type": self.header.type.name.lower(),
            "path": self.path,
            "depth": self.depth,
            "size": self.size,
            "version": self.version if self.version is not None else self.header.version_number,
        }


LISTED_TYPES = (EntityType.FOLDER, EntityType.FILE, EntityType.LINK)
#: what a folder's total needs listed: its files (for the sum) and its folders (to go below)
SUMMED_TYPES = (EntityType.FOLDER, EntityType.FILE)


def _listing(
    platform: Platform, parent_id: str, *, sized: bool
) -> Tuple[List[EntityHeader], Optional[int], Optional[str]]:
    """Every child of ``parent_id``, and with ``sized`` the bytes of its files: the first page's
    ``sumFileSizesBytes`` (all pages together; asked once, as the server sums again on every page it is asked), and
    why it was not read when it was malformed."""
    from synclient.platform.models import PageTrail

    if not sized:
        return _once(platform.iter_children(parent_id, include_types=LISTED_TYPES)), None, None
    trail = PageTrail(f"the children of {parent_id}")
    headers: List[EntityHeader] = []
    file_bytes: Optional[int] = None
    problem: Optional[str] = None
    token: Optional[str] = None
    while True:
        page = platform.list_children(
            parent_id, include_types=LISTED_TYPES, page_token=token, sum_file_sizes=token is None
        )
        if token is None:
            file_bytes = page.sum_file_sizes
            problem = None if page.sum_problem is None else f"the children of {parent_id}: {page.sum_problem}"
        headers.extend(page.headers)
        token = trail.follow(page.next_page_token, rows=len(page.headers))
        if not token:
            return _once(headers), file_bytes, problem


def _once(headers: Iterable[EntityHeader]) -> List[EntityHeader]:
    """Each child once: Synapse pages children by offset, so a child added or removed meanwhile shifts one onto two
    pages (listed twice, its bytes counted twice) or off them."""
    return list({header.id: header for header in headers}.values())


def _walk_tree(platform: Platform, root: EntityHeader, *, recursive: bool, sized: bool = False) -> List[TreeEntry]:
    """Depth-first listing (folders before their contents, in the platform's name order); ``sized``: each listed
    folder's listing also says the bytes of its files."""
    entries = [TreeEntry(root, 0, root.name)]
    if not root.type.is_container:
        return entries

    def visit(parent: TreeEntry, depth: int, prefix: str, above: FrozenSet[str]) -> None:
        children, parent.file_bytes, parent.sum_problem = _listing(platform, parent.header.id, sized=sized)
        parent.listed = True
        for header in children:
            entry = TreeEntry(header, depth, f"{prefix}{header.name}")
            entries.append(entry)
            if recursive and header.type.is_container:
                if header.id in above:  # Synapse's folders are a tree: a server's loop, never listed for ever
                    raise MalformedAnswerError(
                        f"the children of {parent.header.id}: malformed answer: folder {header.id} is listed "
                        "inside itself"
                    )
                visit(entry, depth + 1, f"{prefix}{header.name}/", above | {header.id})

    visit(entries[0], 1, "", frozenset({root.id}))
    return entries


def _bytes_below(platform: Platform, folder_id: str) -> Optional[int]:
    """The bytes of every file below a folder, at any depth, from one children call per folder (its sum, and its
    folders on the same page); a folder of more than a page of children then lists its folders alone. None when a
    listing does not say its sum."""
    total = 0
    pending = [folder_id]
    listed = {folder_id}
    while pending:
        parent = pending.pop()
        first = platform.list_children(parent, include_types=SUMMED_TYPES, sum_file_sizes=True)
        if first.sum_problem is not None:  # said, but malformed: that entry's failure line
            raise MalformedAnswerError(f"the children of {parent}: {first.sum_problem}")
        if first.sum_file_sizes is None:
            return None
        total += first.sum_file_sizes
        if first.next_page_token is None:
            folders = [header.id for header in first.headers if header.type.is_container]
        else:
            folders = [header.id for header in platform.iter_children(parent, include_types=[EntityType.FOLDER])]
        # each folder summed once: one listed again (a page shifted by a change made meanwhile, or a server's loop
        # of a folder inside itself) is neither added twice nor listed for ever
        fresh = [child for child in dict.fromkeys(folders) if child not in listed]
        listed.update(fresh)
        pending.extend(fresh)
    return total


def _plus(left: Optional[int], right: Optional[int]) -> Optional[int]:
    return None if left is None or right is None else left + right


def _fill_sizes(platform: Platform, entries: List[TreeEntry]) -> List[str]:
    """Sizes for ``ls -l``. Files: one bundle call each (a listing says no file's size), a few at a time. Folders:
    the bytes of every file below them, from listings' sums (``includeSumFileSizes``), never from a call per file:
    a listed folder adds its own sum to its folders' totals; a folder whose contents are not listed (``ls -l``
    without ``-r``) takes one children call per folder below it. Returns a line per entry whose answer was
    malformed: that entry's size stays unknown (and its folders' totals), the listing goes on."""

    def size_of(entry: TreeEntry) -> Optional[str]:
        try:
            if entry.header.type.is_container:
                entry.size = _bytes_below(platform, entry.header.id)
                return None
            bundle = platform.get_file_bundle(entry.header.id)
        except MalformedAnswerError as exc:  # a bad answer fails its entity alone (the wire boundary)
            return f"failed: {entry.header.id}: {exc}"
        entry.version = bundle.entity.version_number
        entry.size = bundle.file_handle.content_size if bundle.file_handle else None
        return None

    to_size = [e for e in entries if e.header.type is EntityType.FILE or (e.header.type.is_container and not e.listed)]
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="synclient-ls") as pool:
        failures = [line for line in pool.map(size_of, to_size) if line is not None]
    failures[:0] = [f"failed: {e.header.id}: {e.sum_problem}" for e in entries if e.listed and e.sum_problem]
    below: Dict[int, Optional[int]] = {}  # depth -> the totals of the folders at that depth under one folder
    for entry in reversed(entries):  # a folder's entries come after it: add up from the bottom
        if entry.listed:
            entry.size = _plus(entry.file_bytes, below.pop(entry.depth + 1, 0))
        if entry.header.type.is_container and entry.depth > 0:
            below[entry.depth] = _plus(below.get(entry.depth, 0), entry.size)
    return failures


def _entry_line(entry: TreeEntry, *, long: bool) -> str:
    suffix = "/" if entry.header.type.is_container else "@" if entry.header.type is EntityType.LINK else ""
    name = "  " * entry.depth + entry.header.name + suffix
    if not long:
        return f"{entry.header.id:<14} {name}"
    version = entry.version if entry.version is not None else entry.header.version_number
    version_text = f"v{version}" if version is not None else ""
    size_text = format_size(entry.size) if entry.size is not None else "-"
    return f"{entry.header.id:<14} {version_text:>4} {size_text:>10}  {name}"


def cmd_check(ctx: CommandContext) -> ExitCode:
    """``check``: one line per file in rclone's combined style (``=`` ``*`` ``-`` ``+`` ``!``), then a summary;
    exit 0 when the copy is identical, 1 when anything differs, is missing or failed."""
    from synclient.sync.check import check

    args = ctx.args
    if args.query is not None and (args.ids or args.from_file):
        raise CliError("--query selects the files itself: give no ids or --from-file with it")
    if args.query is None and not args.ids and not args.from_file:
        raise CliError("check needs an id (syn123), several, --from-file FILE or --query SQL")
    refs = _requested_ids(args) if args.query is None else None
    if args.query is not None:
        table_of(args.query)  # a query that names no table is a usage error before any call
    path = Path(args.path)
    _check_target(path)
    ctx.out.json_document.update({"command": "check", "path": str(path.resolve())})
    workers = args.max_workers or TransferConfig().max_workers
    with ctx.platform(max_connections=workers) as platform:
        results = check(
            refs,
            path,
            query=args.query,
            recursive=args.recursive,
            size_only=args.size_only,
            platform=platform,
            include=args.include,
            exclude=args.exclude,
            min_size=args.min_size,
            max_size=args.max_size,
            min_age=args.min_age,
            max_age=args.max_age,
            follow_links=args.follow_links,
            max_workers=args.max_workers,
            progress=ctx.want_progress() and not ctx.out.json_mode,
        )
    ctx.out.json_document.update(results.to_json())
    for checked in results.files:
        ctx.out.result(checked.line)
    ctx.out.result(results.summary())
    return ExitCode.OK if results.identical else ExitCode.FILES_FAILED


def cmd_ls(ctx: CommandContext) -> ExitCode:
    entity_id = _entity_id(ctx.args.id)
    with ctx.platform(max_connections=8) as platform:
        root = platform.get_entity_header(entity_id)
        entries = _walk_tree(platform, root, recursive=ctx.args.recursive, sized=ctx.args.long)
        failures = _fill_sizes(platform, entries) if ctx.args.long else []
    ctx.out.json_document.update({"command": "ls", "entity": entity_id, "entries": [e.to_json() for e in entries]})
    if failures:
        ctx.out.json_document["failures"] = failures
    for entry in entries:
        ctx.out.result(_entry_line(entry, long=ctx.args.long))
    for line in failures:
        ctx.out.failure(line)
    return ExitCode.FILES_FAILED if failures else ExitCode.OK


# -- whoami / login / logout ----------------------------------------------------------------------------------------


def _user_line(profile: Dict[str, Any]) -> str:
    return f"{profile.get('userName', '?')} (user id {profile.get('ownerId', '?')})"


def cmd_whoami(ctx: CommandContext) -> ExitCode:
    token = _require_token(ctx)
    with ctx.platform() as platform:
        profile = platform.get_user_profile()
        endpoint = platform.endpoints.repo
    ctx.out.json_document.update(
        {
            "command": "whoami",
            "user_name": profile.get("userName"),
            "owner_id": profile.get("ownerId"),
            "endpoint": endpoint,
            "token_source": token.source.name.lower(),
            "profile": ctx.profile,
        }
    )
    ctx.out.result(f"{_user_line(profile)} at {endpoint}")
    ctx.out.info(f"token from {token.describe()}")
    return ExitCode.OK


def _read_token_interactively() -> str:
    """The token is typed (hidden) at a terminal, or read from the first line of piped stdin; never echoed."""
    if sys.stdin is not None and sys.stdin.isatty():
        return getpass.getpass("Personal access token (input hidden): ", stream=sys.stderr).strip()
    return (sys.stdin.readline() if sys.stdin is not None else "").strip()


def cmd_login(ctx: CommandContext) -> ExitCode:
    from synclient.platform.credentials import keyring_backend_name

    keyring_backend_name()  # fail first, before asking for anything, when the token could not be stored
    given = ctx.args.token or _read_token_interactively()
    register_secret(given)
    token = clean_token(given, where="the --token option" if ctx.args.token else "the input")
    if not token:
        raise CliError(
            "no token given: create a personal access token in the platform's web site "
            "(Account Settings > Personal Access Tokens) and paste it at the prompt"
        )
    try:
        with ctx.platform(token=token) as platform:
            profile = platform.get_user_profile()
            endpoint = platform.endpoints.repo
    except AuthenticationError:
        raise CliError(
            "that token was rejected by the platform (invalid or expired): create a new personal "
            "access token and run 'synclient login' again"
        ) from None
    backend = store_token(token, ctx.profile)
    ctx.out.json_document.update(
        {
            "command": "login",
            "user_name": profile.get("userName"),
            "owner_id": profile.get("ownerId"),
            "endpoint": endpoint,
            "profile": ctx.profile,
            "keyring_backend": backend,
        }
    )
    ctx.out.result(
        f"logged in as {_user_line(profile)} at {endpoint}; token stored in the keyring "
        f"({backend}) for profile {ctx.profile!r}"
    )
    _warn_about_overrides(ctx)
    return ExitCode.OK


def _warn_about_overrides(ctx: CommandContext) -> None:
    """Sources earlier in the resolution order win over the keyring: say so, or the user will be confused."""
    for variable in ("SYNCLIENT_AUTH_TOKEN", "SYNAPSE_AUTH_TOKEN"):
        if os.environ.get(variable):
            ctx.out.info(f"note: {variable} is set and takes precedence over the keyring")


def cmd_logout(ctx: CommandContext) -> ExitCode:
    try:
        removed = delete_token(ctx.profile)
    except KeyringUnavailableError:
        removed = False
        ctx.out.info("no keyring backend on this machine, so no token was stored there")
    ctx.out.json_document.update({"command": "logout", "profile": ctx.profile, "removed": removed})
    ctx.out.result(
        f"removed the stored token of profile {ctx.profile!r}"
        if removed
        else f"no token stored in the keyring for profile {ctx.profile!r}"
    )
    _warn_about_overrides(ctx)
    return ExitCode.OK


# -- demo -----------------------------------------------------------------------------------------------------------


def cmd_demo(ctx: CommandContext) -> ExitCode:
    from synclient.demo import FULL, SMALL, run_demo

    args = ctx.args
    ignored = [
        option
        for option, value in zip(CONNECTION_OPTIONS, (args.endpoint, args.token, args.profile, args.ca_bundle))
        if value
    ]
    if ignored:  # given before the command, where every command takes them
        ctx.out.info(f"note: demo runs its own emulator (its own endpoint and token): {', '.join(ignored)} ignored")
    path = Path(args.path)
    outcome = run_demo(
        path,
        shape=SMALL if args.small else FULL,
        max_workers=args.max_workers,
        make_observer=lambda description: progress_observer(enabled=ctx.want_progress(), description=description),
        narrate=ctx.out.info,
    )
    first, second = outcome.first.report, outcome.second.report
    ctx.out.json_document.update(
        {
            "command": "demo",
            "path": str(path.resolve()),
            "project": outcome.project_id,
            "first": first.to_json(),
            "second": second.to_json(),
        }
    )
    ctx.out.result(f"first sync:  {first.summary()}")
    ctx.out.result(f"second sync: {second.summary()}")
    failures = outcome.first.failures + outcome.second.failures
    _print_failures(ctx, failures)
    if failures:
        return ExitCode.FILES_FAILED
    if second.downloaded:
        raise CliError(
            f"the second sync downloaded {counted(second.downloaded, 'file')}; an unchanged tree should download none",
            ExitCode.FILES_FAILED,
        )
    ctx.out.result(f"the second sync downloaded nothing: the files in {path} are up to date")
    return ExitCode.OK


# -- main -----------------------------------------------------------------------------------------------------------


class _RedactingFormatter(logging.Formatter):
    """Log lines (tracebacks included) pass through :func:`redact` like every other output."""

    def __init__(self, fmt: str, *, out: Output) -> None:
        super().__init__(fmt)
        self._out = out

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        return visible(super().formatMessage(record))  # a name's line feed forges no log line

    def format(self, record: logging.LogRecord) -> str:
        return visible(self._out.redact(super().format(record)), keep="\n")  # tracebacks keep their lines


def _configure_logging(out: Output) -> None:
    """-v: the library's log on stderr. Otherwise only the REST client's warnings (an endpoint that does not answer
    yet is retried: each retry says so, instead of silence) and the gate's notes (what the platform's request
    window allows: a large tree then comes down in bursts, and the user should know why), none with -q; the CLI
    reports failures itself and other library lines would only repeat them."""
    logger = logging.getLogger("synclient")
    client_logger = logging.getLogger("synclient.platform.rest")
    gate_logger = logging.getLogger("synclient.platform.gate")
    view_logger = logging.getLogger("synclient.sync.auto_view")  # --view auto: made, or why the run walks
    for each in (logger, client_logger, gate_logger, view_logger):
        for handler in [h for h in each.handlers if getattr(h, "synclient_cli", False)]:
            each.removeHandler(handler)  # run() called again in one process: no duplicate lines
    client_logger.setLevel(logging.NOTSET)
    gate_logger.setLevel(logging.NOTSET)
    view_logger.setLevel(logging.NOTSET)
    if out.verbose:
        logger.addHandler(_stderr_handler("%(asctime)s %(levelname)s %(name)s: %(message)s", out=out))
        logger.setLevel(logging.DEBUG if out.verbose > 1 else logging.INFO)
        return
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    logger.setLevel(logging.CRITICAL + 1)
    if not out.quiet:
        client_logger.addHandler(_stderr_handler("synclient: warning: %(message)s", out=out))
        client_logger.setLevel(logging.WARNING)
        gate_logger.addHandler(_stderr_handler("synclient: note: %(message)s", out=out))
        gate_logger.setLevel(logging.INFO)
        view_logger.addHandler(_stderr_handler("synclient: note: %(message)s", out=out))
        view_logger.setLevel(logging.INFO)


def _stderr_handler(fmt: str, *, out: Output) -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_RedactingFormatter(fmt, out=out))
    handler.synclient_cli = True  # type: ignore[attr-defined]
    return handler


def _exit_promptly(code: ExitCode) -> None:
    """After Ctrl-C, give cancelled worker threads a moment, then leave even if one is stuck in a socket read."""
    sys.stdout.flush()
    sys.stderr.flush()
    deadline = time.monotonic() + 3.0
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
    os._exit(int(code))


#: options of synapseclient's ``synapse get`` that synclient spells otherwise or has no use for: a user coming from
#: it gets the one line that says what to type instead (its ``-r``, ``--manifest`` and ``--version N`` are the same
#: here; its ``-q SQL`` and ``-v N`` are ``--query SQL`` and ``--version N``, said where the SQL or N lands as an id)
SYNAPSECLIENT_OPTIONS = {
    "--downloadLocation": "here the directory is --path DIR",
    "--followLink": "here it is --follow-links",
    "--limitSearch": "synclient get takes ids (syn123), never a local path to look up, so it needs no search scope",
    "--multiThreaded": "synclient always downloads in parallel: leave it out (--max-workers N sets the threads)",
}


def _whole_number(text: str) -> bool:
    return text.strip().isascii() and text.strip().isdigit()


def _verbose_not_version(text: str) -> str:
    return (
        f"{text!r} is not an id: -v means verbose here; synapseclient's 'synapse get -v N' is --version N (or syn123.N)"
    )


def _unknown_option_hint(extras: Sequence[str], args: argparse.Namespace) -> Optional[str]:
    """The one line for an option argparse did not know, when we know what the user meant; None otherwise."""
    command = getattr(args, "command", None)
    for text in extras:
        if command == "get" and getattr(args, "verbose", False) and _whole_number(text):
            return _verbose_not_version(text)  # 'get syn1 -v 3': the N after the id's -v is left over
        name = text.split("=", 1)[0]
        if name in SYNAPSECLIENT_OPTIONS:
            return f"{name} is synapseclient's ('synapse get'); {SYNAPSECLIENT_OPTIONS[name]}"
        if command == "demo" and name in CONNECTION_OPTIONS:
            return f"demo runs its own emulator (its own endpoint and token), so {name} does not apply to it"
    return None


def _parse(argv: Optional[Sequence[str]]) -> Tuple[argparse.Namespace, Optional[CliError]]:
    """The arguments, and the usage error of an unknown option we can explain (reported as every error is);
    argparse's own message and exit code 2 for any other."""
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if not extras:
        return args, None
    hint = _unknown_option_hint(extras, args)
    if hint is None:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    return args, CliError(hint)


def run(argv: Optional[Sequence[str]] = None) -> ExitCode:
    args, usage_error = _parse(argv)
    for secret in (args.token, os.environ.get("SYNCLIENT_AUTH_TOKEN"), os.environ.get("SYNAPSE_AUTH_TOKEN")):
        register_secret(secret)  # as given, before anything reads (or refuses) them
    out = Output(json_mode=args.json, quiet=args.quiet, verbose=args.verbose)
    _configure_logging(out)
    install_redaction()
    ctx = CommandContext(args=args, out=out)
    try:
        if usage_error is not None:
            raise usage_error
        code = args.handler(ctx)
    except KeyboardInterrupt:
        out.error("interrupted; finished files and partial downloads are kept, run the same command to resume")
        out.json_document["error"] = {"type": "interrupted", "message": "interrupted"}
        out.emit_json(ExitCode.INTERRUPTED)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # one place maps every error to a line and an exit code
        failure = _explain(exc, ctx)
        if args.verbose:
            log.error("traceback of the error below", exc_info=exc)
        if isinstance(exc, SyncError):
            _print_failures(ctx, exc.failures)
        out.error(str(failure))
        out.json_document["error"] = {"type": exc.__class__.__name__, "message": _one_line(out.redact(str(failure)))}
        out.emit_json(failure.code)
        return failure.code
    out.emit_json(code)
    return code


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        code = run(argv)
    except KeyboardInterrupt:  # a second Ctrl-C while reporting the first
        code = ExitCode.INTERRUPTED
    except BrokenPipeError:  # `synclient ls -r syn1 | head`: the reader left; that is not our error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.FILES_FAILED)
    if code is ExitCode.INTERRUPTED:
        _exit_promptly(code)
    return int(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
