"""Where the platform is and who we are: endpoint and token resolution in one place.

Token: argument > ``SYNCLIENT_AUTH_TOKEN`` > ``SYNAPSE_AUTH_TOKEN`` > ``~/.synapseConfig`` > keyring.
Endpoint: argument > ``SYNCLIENT_ENDPOINT`` > ``~/.synapseConfig`` ``[endpoints]`` > Synapse production.
``~/.synapseConfig`` is the file users of the platform already have (``[authentication] authtoken``,
``[profile NAME]`` sections, ``[endpoints] repoEndpoint/fileHandleEndpoint/authEndpoint``).
"""
from __future__ import annotations

import configparser
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from synclient.errors import ConfigError

PRODUCTION_REPO = "https://repo-prod.prod.sagebase.org/repo/v1"
PRODUCTION_FILE = "https://repo-prod.prod.sagebase.org/file/v1"
PRODUCTION_AUTH = "https://repo-prod.prod.sagebase.org/auth/v1"
KEYRING_SERVICE = "synclient"
DEFAULT_PROFILE = "default"


@dataclass(frozen=True)
class Endpoints:
    repo: str
    file: str
    auth: str

    @classmethod
    def from_root(cls, root: str) -> "Endpoints":
        root = root.rstrip("/")
        if not root.startswith(("http://", "https://")):
            raise ConfigError(f"endpoint must be an http(s) URL, got {root!r}")
        return cls(repo=root + "/repo/v1", file=root + "/file/v1", auth=root + "/auth/v1")

    @classmethod
    def production(cls) -> "Endpoints":
        return cls(repo=PRODUCTION_REPO, file=PRODUCTION_FILE, auth=PRODUCTION_AUTH)


def config_path() -> Path:
    return Path(os.environ.get("SYNAPSE_CONFIG_FILE", "~/.synapseConfig")).expanduser()


def _read_config(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    if path.is_file():
        try:
            parser.read(path, encoding="utf-8")
        except configparser.Error as exc:
            raise ConfigError(f"cannot parse {path}: {exc.__class__.__name__}") from None
    return parser


def _profile_section(profile: Optional[str]) -> str:
    return "authentication" if profile in (None, DEFAULT_PROFILE) else f"profile {profile}"


def resolve_token(token: Optional[str] = None, *, profile: Optional[str] = None) -> Optional[str]:
    """The personal access token from the first source that has one, or None."""
    if token:
        return token
    for variable in ("SYNCLIENT_AUTH_TOKEN", "SYNAPSE_AUTH_TOKEN"):
        if os.environ.get(variable):
            return os.environ[variable]
    parser = _read_config(config_path())
    section = _profile_section(profile)
    if parser.has_option(section, "authtoken"):
        return parser.get(section, "authtoken").strip() or None
    if profile not in (None, DEFAULT_PROFILE) and not parser.has_section(section):
        raise ConfigError(f"no [{section}] section in {config_path()}")
    return keyring_token(profile or DEFAULT_PROFILE)


def keyring_token(profile: str = DEFAULT_PROFILE) -> Optional[str]:
    """The token stored by ``synclient login``, or None when keyring has none or no usable backend."""
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:  # pragma: no cover - keyring is a dependency
        return None
    try:
        return keyring.get_password(KEYRING_SERVICE, profile)
    except (KeyringError, RuntimeError):
        return None


def resolve_endpoints(endpoint: Optional[str] = None, *, repo_endpoint: Optional[str] = None,
                      file_endpoint: Optional[str] = None, auth_endpoint: Optional[str] = None) -> Endpoints:
    """Endpoints from explicit arguments, else the environment, else the config file, else production."""
    if endpoint:
        base = Endpoints.from_root(endpoint)
    elif os.environ.get("SYNCLIENT_ENDPOINT"):
        base = Endpoints.from_root(os.environ["SYNCLIENT_ENDPOINT"])
    else:
        parser = _read_config(config_path())
        production = Endpoints.production()
        get = lambda key, default: (parser.get("endpoints", key).rstrip("/")  # noqa: E731
                                    if parser.has_option("endpoints", key) else default)
        base = Endpoints(repo=get("repoendpoint", production.repo), file=get("filehandleendpoint", production.file),
                         auth=get("authendpoint", production.auth))
    return Endpoints(repo=(repo_endpoint or base.repo).rstrip("/"), file=(file_endpoint or base.file).rstrip("/"),
                     auth=(auth_endpoint or base.auth).rstrip("/"))
