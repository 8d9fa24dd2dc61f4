"""What both planes trust: the certificate authorities, settled once per :class:`~synclient.platform.rest.Platform` and
shared by its REST session and the data plane's client (pre-signed storage URLs, external hosts).

CA bundle: ``ca_bundle=`` / ``--ca-bundle`` > ``REQUESTS_CA_BUNDLE`` > ``SSL_CERT_FILE`` > ``CURL_CA_BUNDLE`` >
``ca_bundle`` under ``[synclient]`` in ``~/.synapseConfig`` > certifi's bundle (what requests, and so
synapseclient, trusts by default). A bundle is a PEM file or an OpenSSL hashed folder. Proxies come from
``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``, read once by each plane's client (not per request).
"""

from __future__ import annotations

import functools
import os
import ssl
from dataclasses import dataclass
from typing import Iterator, Optional

from synclient.errors import CertificateError, ConfigError, exception_chain
from synclient.platform.credentials import config_path, read_config_file
from synclient.redaction import redact

#: the environment variables naming a CA bundle, in the order they are consulted
CA_BUNDLE_VARIABLES = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE")
CONFIG_SECTION = "synclient"
CONFIG_KEY = "ca_bundle"
ARGUMENT_SOURCE = "--ca-bundle / ca_bundle="
DEFAULT_SOURCE = "certifi's bundle (the default)"


@dataclass(frozen=True)
class TrustedCAs:
    """The CAs a certificate must chain to: ``path`` (a PEM file or hashed folder; None: certifi's bundle) and
    where that choice came from (``source``, for error messages)."""

    path: Optional[str]
    source: str

    def ssl_context(self) -> ssl.SSLContext:
        """The one client context for these CAs (hostnames checked, certificates required), made once per bundle
        and shared by every connection of both planes: urllib3 given a bundle *path* parses it again for each new
        connection, about 15 ms of CPU for certifi's 140 certificates, so a sync opening a hundred connections over
        HTTPS paid seconds for it. A bundle that holds no readable certificate is a :class:`ConfigError`."""
        try:
            return _context_for(self.path)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(
                f"the CA bundle {self.path} (from {self.source}) cannot be read as PEM certificates "
                f"({exc.__class__.__name__}): fix or unset it"
            ) from None

    def fix_hint(self) -> str:
        """How to trust a private or proxy CA, and what is trusted now."""
        return (
            f"if a private CA or a TLS-inspecting proxy signs it, give that CA's bundle with --ca-bundle PATH, "
            f"ca_bundle= or REQUESTS_CA_BUNDLE (trusted now: {self.path or 'certifi'}, from {self.source})"
        )


def resolve_trusted_cas(ca_bundle: Optional[str] = None) -> TrustedCAs:
    """The CAs to trust (see the module's order); a bundle that does not exist is a :class:`ConfigError`."""
    for path, source in _candidates(ca_bundle):
        if not path:
            continue
        path = os.path.expanduser(path)
        if not os.path.exists(path):
            raise ConfigError(f"the CA bundle {path} (from {source}) does not exist: fix or unset it")
        return TrustedCAs(path=os.path.abspath(path), source=source)
    return TrustedCAs(path=None, source=DEFAULT_SOURCE)


@functools.cache
def _context_for(path: Optional[str]) -> ssl.SSLContext:
    if path is None:
        import certifi  # requests' own dependency and default: the data plane trusts what the REST plane trusts

        return ssl.create_default_context(cafile=certifi.where())
    if os.path.isdir(path):
        return ssl.create_default_context(capath=path)
    return ssl.create_default_context(cafile=path)


def _candidates(ca_bundle: Optional[str]) -> Iterator[tuple]:
    yield ca_bundle, ARGUMENT_SOURCE
    for name in CA_BUNDLE_VARIABLES:
        yield os.environ.get(name), name
    parser = read_config_file(config_path())
    if parser.has_option(CONFIG_SECTION, CONFIG_KEY):
        yield parser.get(CONFIG_SECTION, CONFIG_KEY).strip(), f"[{CONFIG_SECTION}] {CONFIG_KEY} in {config_path()}"


def certificate_problem(exc: BaseException) -> Optional[str]:
    """What a failed certificate check said (``exc`` or what it wraps), or None when ``exc`` is no such failure."""
    for cause in exception_chain(exc):
        if isinstance(cause, ssl.SSLCertVerificationError):
            return cause.verify_message or str(cause)
        if isinstance(cause, ssl.SSLError) and "CERTIFICATE_VERIFY_FAILED" in str(cause):
            return "certificate verify failed"
    return None


def untrusted_certificate(host: str, problem: str, trusted: TrustedCAs) -> CertificateError:
    """``host``: the words naming the host (``"endpoint https://..."``), redacted here whoever built them."""
    host = redact(host)
    return CertificateError(
        f"the TLS certificate of {host} is not trusted ({problem}); {trusted.fix_hint()}", host=host
    )
