"""The identity provider's signing certificate, as an admin pastes it: PEM, or the bare base64
of the DER bytes (what SAML metadata carries). Parsed by `cryptography`, never by hand."""

from __future__ import annotations

import base64
import binascii
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography import x509


_PEM = re.compile(
    r"-----BEGIN CERTIFICATE-----(?P<body>[A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----"
)


class CertificateError(ValueError):
    """Why the text is not a usable certificate; the message goes to the client."""


def der_base64(text: str) -> str:
    """The certificate's DER bytes in base64 on one line, as SAML metadata writes it."""
    from cryptography.hazmat.primitives.serialization import Encoding

    return base64.b64encode(_parse(text).public_bytes(Encoding.DER)).decode("ascii")


def check(text: str, now: datetime) -> None:
    """Raises CertificateError unless `text` is one X.509 certificate valid at `now`."""
    cert = _parse(text)
    not_after = cert.not_valid_after_utc
    if not_after <= _aware(now):
        raise CertificateError(f"certificate expired on {not_after.isoformat()}")
    not_before = cert.not_valid_before_utc
    if not_before > _aware(now):
        raise CertificateError(f"certificate is not valid before {not_before.isoformat()}")


def _aware(now: datetime) -> datetime:
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


def _parse(text: str) -> x509.Certificate:
    from cryptography import x509

    stripped = text.strip()
    matches = list(_PEM.finditer(stripped))
    if len(matches) > 1:
        raise CertificateError("expected one certificate, found several")
    body = matches[0].group("body") if matches else stripped
    if not matches and "-----BEGIN" in stripped:
        raise CertificateError("expected a PEM CERTIFICATE block or bare base64")
    try:
        der = base64.b64decode("".join(body.split()), validate=True)
    except (binascii.Error, ValueError):
        raise CertificateError("not PEM or base64") from None
    if not der:
        raise CertificateError("empty certificate")
    try:
        return x509.load_der_x509_certificate(der)
    except ValueError as exc:
        raise CertificateError(f"not an X.509 certificate ({exc})") from None
