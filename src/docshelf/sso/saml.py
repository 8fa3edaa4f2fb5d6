"""The service provider's SAML work, done by pysaml2 (XML through defusedxml, signatures by
Debian's `xmlsec1`): building an AuthnRequest and verifying a Response. Both run in the offload
pool (kit/offload.py, "parse" lane): pysaml2 parses XML and runs `xmlsec1` as a subprocess per
signature, which must not stop the event loop. Plain data in, plain data out, so both cross the
process boundary; a refusal is a `SamlRefused` whose message goes to the client."""

from __future__ import annotations

import base64
import calendar
import logging
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape, quoteattr

from docshelf.sso.certificate import der_base64

if TYPE_CHECKING:
    from saml2.client import Saml2Client

# pysaml2's names, spelled out so that this module loads without pysaml2 (and its XML Schema
# stack, ~30 MB): only the offload worker that does the SAML work imports it.
BINDING_HTTP_POST = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
BINDING_HTTP_REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
NAMEID_FORMAT_EMAILADDRESS = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"
NAMEID_FORMAT_TRANSIENT = "urn:oasis:names:tc:SAML:2.0:nameid-format:transient"
SCM_BEARER = "urn:oasis:names:tc:SAML:2.0:cm:bearer"

# pysaml2 logs whole refused documents at ERROR (attacker-sized text, up to megabytes a
# request); the refusal's reason is logged by sso.login instead.
logging.getLogger("saml2").setLevel(logging.CRITICAL)

# Clocks of the identity provider and ours may differ by this much (seconds), no more.
CLOCK_SKEW_SECONDS = 60

# Where identity providers commonly put the e-mail address when the NameID is not one.
_EMAIL_ATTRIBUTES = (
    "email",
    "mail",
    "emailAddress",
    "urn:oid:0.9.2342.19200300.100.1.3",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
)
_NAME_ATTRIBUTES = (
    "displayName",
    "name",
    "cn",
    "urn:oid:2.16.840.1.113730.3.1.241",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
)


class SamlRefused(Exception):
    """The response (or the provider's settings) cannot log anyone in; the message says why."""


@dataclass(frozen=True, slots=True)
class Partner:
    """One provider as both sides see it: the identity provider's settings and our endpoints."""

    idp_entity_id: str
    sso_url: str
    certificate: str
    sp_entity_id: str
    acs_url: str


@dataclass(frozen=True, slots=True)
class Verified:
    """What a verified response asserts. `expires_at` (UTC) bounds the replay record."""

    assertion_id: str
    in_response_to: str
    # Who the provider says logged in, stable across logins: the NameID, or for a transient
    # NameID (new each login) the e-mail address. Identities are keyed by (provider, subject).
    subject: str
    email: str
    display_name: str | None
    expires_at: datetime


def xmlsec_binary() -> str | None:
    return shutil.which("xmlsec1")


def idp_metadata(p: Partner) -> str:
    """The identity provider as SAML metadata, built from the provider's three settings."""
    return (
        '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"'
        ' xmlns:ds="http://www.w3.org/2000/09/xmldsig#"'
        f" entityID={quoteattr(p.idp_entity_id)}>"
        '<md:IDPSSODescriptor WantAuthnRequestsSigned="false"'
        ' protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
        '<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>'
        f"{escape(der_base64(p.certificate))}"
        "</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>"
        f'<md:SingleSignOnService Binding="{BINDING_HTTP_REDIRECT}"'
        f" Location={quoteattr(p.sso_url)}/>"
        "</md:IDPSSODescriptor></md:EntityDescriptor>"
    )


def sp_metadata(sp_entity_id: str, acs_url: str) -> str:
    """Our side as SAML metadata, served at our entity ID for identity providers that read it."""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"'
        f" entityID={quoteattr(sp_entity_id)}>"
        '<md:SPSSODescriptor AuthnRequestsSigned="false" WantAssertionsSigned="true"'
        ' protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
        f"<md:NameIDFormat>{NAMEID_FORMAT_EMAILADDRESS}</md:NameIDFormat>"
        f'<md:AssertionConsumerService Binding="{BINDING_HTTP_POST}"'
        f' Location={quoteattr(acs_url)} index="0" isDefault="true"/>'
        "</md:SPSSODescriptor></md:EntityDescriptor>"
    )


def _client(p: Partner) -> Saml2Client:
    from saml2.client import Saml2Client
    from saml2.config import SPConfig

    conf = SPConfig()
    conf.load(
        {
            "entityid": p.sp_entity_id,
            "xmlsec_binary": xmlsec_binary(),
            "accepted_time_diff": CLOCK_SKEW_SECONDS,
            # Signatures are checked only against the provider's certificate, never a key the
            # message carries itself.
            "only_use_keys_in_metadata": True,
            "allow_unknown_attributes": True,
            "metadata": {"inline": [idp_metadata(p)]},
            "service": {
                "sp": {
                    "endpoints": {"assertion_consumer_service": [(p.acs_url, BINDING_HTTP_POST)]},
                    # InResponseTo is checked by the caller against the requests it stored
                    # (and consumes them); pysaml2 only knows outstanding requests in memory.
                    # `verify_response` still requires one and returns it.
                    "allow_unsolicited": True,
                    # The assertion must be signed; a signature on the response alone does not
                    # cover an assertion that was swapped in beside it.
                    "want_assertions_signed": True,
                    "want_response_signed": False,
                    "authn_requests_signed": False,
                    "name_id_format": NAMEID_FORMAT_EMAILADDRESS,
                }
            },
        }
    )
    return Saml2Client(conf)


def authn_request(p: Partner, relay_state: str) -> tuple[str, str]:
    """(request id, the identity provider's URL carrying the AuthnRequest): HTTP-Redirect."""
    request_id, info = _client(p).prepare_for_authenticate(
        entityid=p.idp_entity_id, relay_state=relay_state, binding=BINDING_HTTP_REDIRECT
    )
    location = dict(info["headers"])["Location"]
    return str(request_id), str(location)


def verify_response(p: Partner, encoded: str) -> Verified:
    """Verifies a base64 SAMLResponse (HTTP-POST) against the provider: pysaml2 checks the
    signatures (the assertion's required), the status, audience, time window (with skew),
    recipient and destination when present; then we require what pysaml2 leaves optional."""
    _require_strong_algorithms(encoded)
    try:
        parsed = _client(p).parse_authn_request_response(encoded, BINDING_HTTP_POST)
    except Exception as exc:
        raise SamlRefused(_reason(exc)) from None
    if parsed is None or parsed.assertion is None:
        raise SamlRefused("the response did not verify")
    response = parsed.response
    assertion = parsed.assertion
    if response.destination != p.acs_url:
        raise SamlRefused("the response's Destination is not this provider's ACS URL")
    if response.issuer is not None and (response.issuer.text or "").strip() != p.idp_entity_id:
        raise SamlRefused("the response's Issuer is not this provider's entity ID")
    if assertion.issuer is None or (assertion.issuer.text or "").strip() != p.idp_entity_id:
        raise SamlRefused("the assertion's Issuer is not this provider's entity ID")
    conditions = assertion.conditions
    audiences = [
        (audience.text or "").strip()
        for restriction in (conditions.audience_restriction if conditions else [])
        for audience in restriction.audience
    ]
    if p.sp_entity_id not in audiences:
        raise SamlRefused("the assertion is not addressed to this service provider (audience)")
    request_id = response.in_response_to
    if not request_id:
        raise SamlRefused("the response answers no request (InResponseTo missing)")
    expiries = []
    if conditions is not None and conditions.not_on_or_after:
        expiries.append(conditions.not_on_or_after)
    bearer = [sc for sc in assertion.subject.subject_confirmation if sc.method == SCM_BEARER]
    if not bearer:
        raise SamlRefused("the assertion has no bearer subject confirmation")
    for confirmation in bearer:
        data = confirmation.subject_confirmation_data
        if data is None or data.in_response_to != request_id:
            raise SamlRefused("the subject confirmation answers another request (InResponseTo)")
        if data.recipient != p.acs_url:
            raise SamlRefused("the subject confirmation's Recipient is not the ACS URL")
        if data.not_on_or_after:
            expiries.append(data.not_on_or_after)
    if not expiries:
        raise SamlRefused("the assertion has no expiry (NotOnOrAfter)")
    if not assertion.id:
        raise SamlRefused("the assertion has no ID")
    email = _email(parsed)
    if email is None:
        raise SamlRefused("the assertion names no e-mail address (NameID or an email attribute)")
    return Verified(
        assertion_id=str(assertion.id),
        in_response_to=str(request_id),
        subject=_subject(parsed, email),
        email=email,
        display_name=_first(parsed.ava or {}, _NAME_ATTRIBUTES),
        expires_at=min(_utc(value) for value in expiries),
    )


# XML-DSig algorithms accepted in a response: SHA-1 and MD5 collide, so a signature made with
# them proves nothing (xmlsec1 and pysaml2 both still verify them). Fail closed on anything else.
_DSIG = "{http://www.w3.org/2000/09/xmldsig#}"
_STRONG_SIGNATURES = frozenset(
    "http://www.w3.org/2001/04/xmldsig-more#" + name
    for name in (
        "rsa-sha256",
        "rsa-sha384",
        "rsa-sha512",
        "ecdsa-sha256",
        "ecdsa-sha384",
        "ecdsa-sha512",
    )
)
_STRONG_DIGESTS = frozenset(
    {
        "http://www.w3.org/2001/04/xmlenc#sha256",
        "http://www.w3.org/2001/04/xmldsig-more#sha384",
        "http://www.w3.org/2001/04/xmlenc#sha512",
    }
)


def _require_strong_algorithms(encoded: str) -> None:
    """Every signature in the document uses a SHA-2 signature method and digests."""
    from defusedxml import ElementTree

    try:
        root = ElementTree.fromstring(base64.b64decode(encoded, validate=False))
    except Exception:
        raise SamlRefused("not a valid SAML response (unreadable XML)") from None
    for element in root.iter():
        tag = element.tag
        if tag == _DSIG + "SignatureMethod":
            if element.get("Algorithm") not in _STRONG_SIGNATURES:
                raise SamlRefused(
                    f"signature algorithm {element.get('Algorithm')!r} refused: sign with "
                    "RSA or ECDSA over SHA-256, SHA-384 or SHA-512"
                )
        elif tag == _DSIG + "DigestMethod" and element.get("Algorithm") not in _STRONG_DIGESTS:
            raise SamlRefused(
                f"digest algorithm {element.get('Algorithm')!r} refused: use SHA-256, "
                "SHA-384 or SHA-512"
            )


def _utc(value: str) -> datetime:
    from saml2.time_util import str_to_time

    seconds = calendar.timegm(str_to_time(value))
    return datetime.fromtimestamp(seconds, UTC)


def _first(ava: dict[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        values = ava.get(name)
        if values and isinstance(values[0], str) and values[0].strip():
            return values[0].strip()
    return None


def _subject(parsed: Any, email: str) -> str:
    name_id = parsed.name_id
    text = (name_id.text or "").strip() if name_id is not None else ""
    if not text or (name_id.format or "") == NAMEID_FORMAT_TRANSIENT:
        return "email:" + email
    if len(text) > 1000:
        raise SamlRefused("the assertion's NameID is longer than 1000 characters")
    if (name_id.format or "") == NAMEID_FORMAT_EMAILADDRESS:
        # Providers spell one address with different cases from one login to the next.
        text = text.lower()
    return f"{name_id.format or ''}|{text}"


def _email(parsed: Any) -> str | None:
    name_id = parsed.name_id
    candidates = [_first(parsed.ava or {}, _EMAIL_ATTRIBUTES)]
    if name_id is not None and name_id.text:
        candidates.insert(0, name_id.text.strip())
    for candidate in candidates:
        if candidate and "@" in candidate:
            return candidate.lower()
    return None


# pysaml2 exception class names → what the client is told. Messages of the exceptions
# themselves can carry xmlsec1's output or file names, so they are not passed on.
_REASONS = {
    "SignatureError": "signature missing or invalid",
    "MissingKey": "no key of this provider signed the response",
    "ResponseLifetimeExceed": "the assertion has expired",
    "ToEarly": "the assertion is not valid yet",
    "StatusError": "the identity provider reported a failure",
    "InvalidAssertion": "the response must hold exactly one assertion",
    "VerificationError": "the assertion did not verify",
    "UnsolicitedResponse": "the response answers no request of ours",
    "IncorrectlySigned": "signature missing or invalid",
}


def _reason(exc: Exception) -> str:
    for cls in type(exc).__mro__:
        if cls.__name__ in _REASONS:
            return _REASONS[cls.__name__]
    text = str(exc)
    if "AudienceRestrictions" in text:
        return "the assertion is not addressed to this service provider (audience)"
    if "Destination" in text or "destination" in text:
        return "the response's Destination is not this provider's ACS URL"
    return f"not a valid SAML response ({type(exc).__name__})"
