"""Where the platform is and who we are: endpoint and token resolution in one place.

Token: argument > ``SYNCLIENT_AUTH_TOKEN`` > ``SYNAPSE_AUTH_TOKEN`` > ``~/.synapseConfig`` > keyring, without the
whitespace around it (see :func:`clean_token`).
Profile: argument > ``SYNCLIENT_PROFILE`` > ``SYNAPSE_PROFILE`` > "default"; it picks the config file section
and the keyring entry (service "synclient", user = profile name).
Endpoint: argument > ``SYNCLIENT_ENDPOINT`` > ``~/.synapseConfig`` ``[endpoints]`` > Synapse production; the first
two name the platform's root, with or without a trailing ``/repo/v1``, ``/file/v1`` or ``/auth/v1``
(:func:`service_root`).
``~/.synapseConfig`` (or ``SYNAPSE_CONFIG_FILE``) is the file users of the platform already have, read as
synapseclient 4.14 reads it (``get_config_authentication``): profile "default" takes section ``[default]`` (what
``synapse config`` writes) and, when the file has none, ``[authentication]`` (older files); profile NAME takes
``[profile NAME]``; ``[endpoints] repoEndpoint/fileHandleEndpoint/authEndpoint``.
"""

from __future__ import annotations

import configparser
import enum
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from synclient.errors import ConfigError, KeyringUnavailableError
from synclient.redaction import has_userinfo, redact, redact_url, register_secret, register_url_credentials

if TYPE_CHECKING:  # pragma: no cover - keyring itself is imported where it is used (a slow import)
    from keyring.backend import KeyringBackend

PRODUCTION_REPO = "https://repo-prod.prod.sagebase.org/repo/v1"
PRODUCTION_FILE = "https://repo-prod.prod.sagebase.org/file/v1"
PRODUCTION_AUTH = "https://repo-prod.prod.sagebase.org/auth/v1"
KEYRING_SERVICE = "synclient"
DEFAULT_PROFILE = "default"


#: the path of each service under the platform's root (``Endpoints.from_root`` appends them)
SERVICE_PATHS = ("/repo/v1", "/file/v1", "/auth/v1")


def service_root(url: str) -> str:
    """The platform's root from what a user may give as ``--endpoint``, ``SYNCLIENT_ENDPOINT`` or ``endpoint=``:
    trailing slashes and one trailing service path (``/repo/v1``, ``/file/v1``, ``/auth/v1``) are dropped, so the
    URL ``synclient whoami`` prints works as well as the root (the service path is never doubled). The scheme is
    read in any case (``HTTPS://``). A query string or a fragment is a :class:`ConfigError` (the service paths
    would go after it, and a URL's query is never shown: the error would be a mystery)."""
    root = url.strip()
    scheme, sep, rest = root.partition("://")
    if sep and scheme.lower() in ("http", "https"):
        root = scheme.lower() + sep + rest
    if "?" in root or "#" in root:
        shown = redact_url(root.split("#", 1)[0].split("?", 1)[0])
        raise ConfigError(
            f"the endpoint {shown} has a query string or a fragment ('?...' or '#...', not shown): give the "
            f"platform's root (https://host) or a service's URL (https://host/repo/v1), nothing after the path"
        )
    root = root.rstrip("/")
    for path in SERVICE_PATHS:
        if root.lower().endswith(path):
            return root[: -len(path)].rstrip("/")
    return root


@dataclass(frozen=True)
class Endpoints:
    """The platform's three service URLs. None carries a user or password (:class:`ConfigError`, the URL shown
    redacted): the platform is reached with the access token alone, and requests would otherwise send that
    ``user:password`` as Basic auth in place of the token. The repr shows them redacted."""

    repo: str
    file: str
    auth: str

    def __post_init__(self) -> None:
        for url in (self.repo, self.file, self.auth):
            if has_userinfo(url):
                register_url_credentials(url)  # never shown, whatever prints the URL's parts
                raise ConfigError(
                    f"the endpoint {redact_url(url)} has a user name or password in it (not shown): "
                    f"the platform is reached with the access token alone; remove the "
                    f"'user:password@' part"
                )

    def __repr__(self) -> str:
        return redact(f"Endpoints(repo={self.repo!r}, file={self.file!r}, auth={self.auth!r})")

    @classmethod
    def from_root(cls, root: str) -> Endpoints:
        """The three services under one root: ``http://host:8080``, or a service's own URL as ``whoami`` prints it
        (``http://host:8080/repo/v1``, also ``/file/v1`` or ``/auth/v1``), with or without a trailing slash."""
        root = service_root(root)
        if not root.startswith(("http://", "https://")):
            raise ConfigError(f"endpoint must be an http(s) URL, got {redact(repr(root))}")
        return cls(repo=root + "/repo/v1", file=root + "/file/v1", auth=root + "/auth/v1")

    @classmethod
    def production(cls) -> Endpoints:
        return cls(repo=PRODUCTION_REPO, file=PRODUCTION_FILE, auth=PRODUCTION_AUTH)


def config_path() -> Path:
    return Path(os.environ.get("SYNAPSE_CONFIG_FILE", "~/.synapseConfig")).expanduser()


def read_config_file(path: Path) -> configparser.ConfigParser:
    """The config file as synclient reads it (a missing file reads as empty); a file that cannot be parsed is a
    :class:`ConfigError`."""
    # strict=False: synapseclient 4.14's 'synapse config --profile NAME' on a new file writes the section header
    # twice, a file its own strict parser then refuses; we read the repeated sections as one
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    if path.is_file():
        try:
            parser.read(path, encoding="utf-8")
        except configparser.Error as exc:
            raise ConfigError(f"cannot parse {path}: {exc.__class__.__name__}") from None
    return parser


LEGACY_DEFAULT_SECTION = "authentication"


def _profile_section(parser: configparser.ConfigParser, profile: Optional[str]) -> str:
    """The section a profile's credentials are read from, as synapseclient reads them: "default" is ``[default]``
    when the file has that section (even without a token in it: synapseclient then looks no further in the file),
    else ``[authentication]``."""
    if profile in (None, DEFAULT_PROFILE):
        return (
            DEFAULT_PROFILE
            if parser.has_section(DEFAULT_PROFILE) and parser.items(DEFAULT_PROFILE)
            else LEGACY_DEFAULT_SECTION
        )
    return f"profile {profile}"


def resolve_profile(profile: Optional[str] = None) -> str:
    """The profile name: argument > ``SYNCLIENT_PROFILE`` > ``SYNAPSE_PROFILE`` (synapseclient's) > "default"."""
    return profile or os.environ.get("SYNCLIENT_PROFILE") or os.environ.get("SYNAPSE_PROFILE") or DEFAULT_PROFILE


class TokenSource(enum.Enum):
    """Where a token came from (``synclient whoami`` shows it; error messages use it to say what to fix)."""

    ARGUMENT = "the --token option / token= argument"
    SYNCLIENT_ENV = "the SYNCLIENT_AUTH_TOKEN environment variable"
    SYNAPSE_ENV = "the SYNAPSE_AUTH_TOKEN environment variable"
    CONFIG_FILE = "the config file"
    KEYRING = "the keyring (synclient login)"


@dataclass(frozen=True)
class ResolvedToken:
    token: str
    source: TokenSource
    detail: str = ""  # e.g. which config file and section

    def __repr__(self) -> str:  # never shows the token
        return f"ResolvedToken(source={self.source.name}, detail={self.detail!r})"

    def describe(self) -> str:
        return f"{self.source.value} ({self.detail})" if self.detail else self.source.value


def find_token(token: Optional[str] = None, *, profile: Optional[str] = None) -> Optional[ResolvedToken]:
    """The token and its source, from the first source that has one, or None.

    Whitespace around a token (CRLF env files, secrets with a trailing newline) is dropped wherever it is read; a
    token with a space, control or non-ASCII character inside is a :class:`ConfigError` that never shows it.
    A profile named explicitly (argument or environment) that no source knows is a :class:`ConfigError`:
    a typo must not silently fall back to another identity.
    """
    found = _checked(token, TokenSource.ARGUMENT)
    for variable, source in (
        ("SYNCLIENT_AUTH_TOKEN", TokenSource.SYNCLIENT_ENV),
        ("SYNAPSE_AUTH_TOKEN", TokenSource.SYNAPSE_ENV),
    ):
        found = found or _checked(os.environ.get(variable), source)
    if found:
        return found
    name = resolve_profile(profile)
    path = config_path()
    parser = read_config_file(path)
    section = _profile_section(parser, name)
    found = (
        _checked(parser.get(section, "authtoken"), TokenSource.CONFIG_FILE, f"{path} [{section}]")
        if parser.has_option(section, "authtoken")
        else None
    )
    found = found or _checked(keyring_token(name), TokenSource.KEYRING, f"profile {name!r}")
    if found:
        return found
    if name != DEFAULT_PROFILE and not parser.has_section(section):
        raise ConfigError(
            f"unknown profile {name!r}: no [{section}] section in {path} and no token stored "
            f"for it by 'synclient login --profile {name}'"
        )
    return None


def _checked(raw: Optional[str], source: TokenSource, detail: str = "") -> Optional[ResolvedToken]:
    """The token of one source without surrounding whitespace, None when that leaves nothing."""
    token = clean_token(raw or "", where=ResolvedToken("", source, detail).describe())
    return ResolvedToken(token, source, detail) if token else None


def clean_token(raw: str, *, where: str) -> str:
    """``raw`` without surrounding whitespace; a space, control or non-ASCII character inside it (which would make
    an invalid or wrong ``Authorization`` header) is a one-line :class:`ConfigError` that does not show the token."""
    token = raw.strip()
    register_secret(raw)  # the token synclient holds: from now on redacted wherever it would show
    bad = next((index for index, char in enumerate(token) if not "\x21" <= char <= "\x7e"), None)
    if bad is not None:
        raise ConfigError(
            f"the access token from {where} has a space, control or non-ASCII character inside it "
            f"(character {bad + 1} of {len(token)}; the token is not shown): copy it again, exactly"
        )
    return token


def resolve_token(token: Optional[str] = None, *, profile: Optional[str] = None) -> Optional[str]:
    """The personal access token from the first source that has one, or None."""
    found = find_token(token, profile=profile)
    return found.token if found else None


# -- keyring: where 'synclient login' keeps the token ---------------------------------------------------------


def _usable_keyring() -> KeyringBackend:
    """The active keyring backend, or raise :class:`KeyringUnavailableError` when it cannot store anything."""
    try:
        import keyring
        from keyring.backends import fail, null
    except ImportError:  # pragma: no cover - keyring is a dependency
        raise KeyringUnavailableError("the keyring package is not installed") from None
    try:
        backend = keyring.get_keyring()
    except Exception as exc:  # a broken backend configuration must not crash login
        raise KeyringUnavailableError(f"{exc.__class__.__name__}: {exc}") from None
    if isinstance(backend, (fail.Keyring, null.Keyring)):
        raise KeyringUnavailableError(f"active backend: {backend.__class__.__module__}")
    return backend


def keyring_backend_name() -> str:
    backend = _usable_keyring()
    return f"{backend.__class__.__module__}.{backend.__class__.__name__}"


def keyring_available() -> bool:
    try:
        _usable_keyring()
    except KeyringUnavailableError:
        return False
    return True


def keyring_token(profile: str = DEFAULT_PROFILE) -> Optional[str]:
    """The token stored by ``synclient login``, or None when keyring has none or no usable backend."""
    try:
        from keyring.errors import KeyringError

        backend = _usable_keyring()
        return backend.get_password(KEYRING_SERVICE, profile)
    except (KeyringUnavailableError, KeyringError, RuntimeError):
        return None


def store_token(token: str, profile: Optional[str] = None) -> str:
    """Save ``token`` in the keyring for ``profile``; returns the backend name. Raises KeyringUnavailableError."""
    from keyring.errors import KeyringError

    token = clean_token(token, where="the token given to store")
    if not token:
        raise ConfigError("an empty token cannot be stored")
    backend = _usable_keyring()
    try:
        backend.set_password(KEYRING_SERVICE, resolve_profile(profile), token)
    except (KeyringError, RuntimeError) as exc:
        raise KeyringUnavailableError(f"{exc.__class__.__name__}: {exc}") from None
    return f"{backend.__class__.__module__}.{backend.__class__.__name__}"


def delete_token(profile: Optional[str] = None) -> bool:
    """Remove the stored token of ``profile``; False when there was none. Raises KeyringUnavailableError."""
    from keyring.errors import KeyringError, PasswordDeleteError

    backend = _usable_keyring()
    name = resolve_profile(profile)
    try:
        if backend.get_password(KEYRING_SERVICE, name) is None:
            return False
        backend.delete_password(KEYRING_SERVICE, name)
    except PasswordDeleteError:
        return False
    except (KeyringError, RuntimeError) as exc:
        raise KeyringUnavailableError(f"{exc.__class__.__name__}: {exc}") from None
    return True


def endpoint_source(endpoint: Optional[str] = None) -> str:
    """Where :func:`resolve_endpoints` takes the endpoint from, in words a user can act on."""
    if endpoint:
        return "the --endpoint option / endpoint= argument"
    if os.environ.get("SYNCLIENT_ENDPOINT"):
        return "the SYNCLIENT_ENDPOINT environment variable"
    if read_config_file(config_path()).has_section("endpoints"):
        return f"the [endpoints] section of {config_path()}"
    return "the default (Synapse production)"


def resolve_endpoints(
    endpoint: Optional[str] = None,
    *,
    repo_endpoint: Optional[str] = None,
    file_endpoint: Optional[str] = None,
    auth_endpoint: Optional[str] = None,
) -> Endpoints:
    """Endpoints from explicit arguments, else the environment, else the config file, else production."""
    if endpoint:
        base = Endpoints.from_root(endpoint)
    elif os.environ.get("SYNCLIENT_ENDPOINT"):
        base = Endpoints.from_root(os.environ["SYNCLIENT_ENDPOINT"])
    else:
        parser = read_config_file(config_path())
        production = Endpoints.production()

        def get(key: str, default: str) -> str:
            return parser.get("endpoints", key).rstrip("/") if parser.has_option("endpoints", key) else default

        base = Endpoints(
            repo=get("repoendpoint", production.repo),
            file=get("filehandleendpoint", production.file),
            auth=get("authendpoint", production.auth),
        )
    return Endpoints(
        repo=(repo_endpoint or base.repo).rstrip("/"),
        file=(file_endpoint or base.file).rstrip("/"),
        auth=(auth_endpoint or base.auth).rstrip("/"),
    )
