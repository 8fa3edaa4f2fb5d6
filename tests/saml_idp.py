"""A real SAML identity provider for the SSO tests, built with pysaml2 (the library the service
provider uses) in the test process, with keys and certificates made by `cryptography`. It reads
the AuthnRequest our start URL redirects to and answers with a signed Response, or with one of
the forgeries the tests try."""

from __future__ import annotations

import base64
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT, xmldsig
from saml2.config import IdPConfig
from saml2.saml import AUTHN_PASSWORD, NAMEID_FORMAT_EMAILADDRESS, NameID
from saml2.server import Server


@dataclass(frozen=True)
class KeyPair:
    key_pem: str
    cert_pem: str


# Valid at the tests' frozen clock (2026-01-02) and at the real time pysaml2 checks against.
_LONG_AGO = datetime(2025, 1, 1, tzinfo=UTC)


def key_pair(
    common_name: str = "idp.test", *, not_before: datetime = _LONG_AGO, days: int = 3650
) -> KeyPair:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = not_before
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + timedelta(days=days))
        .sign(key, hashes.SHA256())
    )
    return KeyPair(
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode(),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM).decode(),
    )


def bare_base64(cert_pem: str) -> str:
    return "".join(line for line in cert_pem.splitlines() if not line.startswith("-----"))


@dataclass
class IdentityProvider:
    """One IdP signing with `keys`. `sp` is the provider's `service` object from our API."""

    entity_id: str
    sso_url: str
    keys: KeyPair
    sp: dict[str, str]
    _dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="idp-")))

    def __post_init__(self) -> None:
        # pysaml2 reads keys from files; the folder goes with the IdP instead of piling up in /tmp.
        weakref.finalize(self, shutil.rmtree, self._dir, True)

    def server(self, lifetime_minutes: int = 15) -> Server:
        key_file = self._dir / "key.pem"
        cert_file = self._dir / "cert.pem"
        key_file.write_text(self.keys.key_pem)
        cert_file.write_text(self.keys.cert_pem)
        conf = IdPConfig()
        conf.load(
            {
                "entityid": self.entity_id,
                "key_file": str(key_file),
                "cert_file": str(cert_file),
                "metadata": {"inline": [self._sp_metadata()]},
                "service": {
                    "idp": {
                        "endpoints": {
                            "single_sign_on_service": [(self.sso_url, BINDING_HTTP_REDIRECT)]
                        },
                        "policy": {"default": {"lifetime": {"minutes": lifetime_minutes}}},
                        "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
                    }
                },
            }
        )
        return Server(config=conf)

    def _sp_metadata(self) -> str:
        return (
            '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"'
            f' entityID="{self.sp["entityID"]}">'
            '<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
            f'<md:AssertionConsumerService Binding="{BINDING_HTTP_POST}"'
            f' Location="{self.sp["acsURL"]}" index="0"/>'
            "</md:SPSSODescriptor></md:EntityDescriptor>"
        )

    def read_request(self, location: str) -> Any:
        """The AuthnRequest carried by the redirect our start URL answered."""
        assert location.startswith(self.sso_url + "?"), location
        query = parse_qs(urlsplit(location).query)
        return self.server().parse_authn_request(query["SAMLRequest"][0], BINDING_HTTP_REDIRECT)

    def respond(
        self,
        request_id: str,
        email: str,
        *,
        name: str = "Ada Lovelace",
        audience: str | None = None,
        destination: str | None = None,
        sign_assertion: bool = True,
        sign_response: bool = False,
        lifetime_minutes: int = 15,
        sha1: bool = False,
    ) -> str:
        """A base64 SAMLResponse, as the IdP would POST it to our ACS (signed with RSA-SHA256, or
        with pysaml2's old default RSA-SHA1 when `sha1`)."""
        server = self.server(lifetime_minutes)
        response = server.create_authn_response(
            identity={"mail": [email], "displayName": [name]},
            in_response_to=request_id,
            destination=destination or self.sp["acsURL"],
            sp_entity_id=audience or self.sp["entityID"],
            name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=email),
            sign_assertion=sign_assertion,
            sign_response=sign_response,
            authn={"class_ref": AUTHN_PASSWORD, "authn_auth": self.entity_id},
            sign_alg=xmldsig.SIG_RSA_SHA1 if sha1 else xmldsig.SIG_RSA_SHA256,
            digest_alg=xmldsig.DIGEST_SHA1 if sha1 else xmldsig.DIGEST_SHA256,
        )
        return base64.b64encode(str(response).encode()).decode()


def decode(encoded: str) -> str:
    return base64.b64decode(encoded).decode()


def encode(xml: str) -> str:
    return base64.b64encode(xml.encode()).decode()


def _assertion_span(xml: str) -> tuple[int, int]:
    start = xml.index("<ns1:Assertion ")
    end = xml.index("</ns1:Assertion>") + len("</ns1:Assertion>")
    return start, end


def wrapped_in_advice(encoded: str, victim: str, attacker: str) -> str:
    """Signature wrapping (XSW): a forged assertion for `attacker` under a new ID, carrying the
    genuine signature, with the genuine signed assertion hidden in its Advice, where the
    signature's reference still finds it."""
    xml = decode(encoded)
    start, end = _assertion_span(xml)
    genuine = xml[start:end]
    forged = genuine.replace(victim, attacker).replace(' ID="', ' ID="evil-', 1)
    forged = forged.replace(' Id="', ' Id="evil-', 1)
    forged = forged.replace(
        "</ns1:Conditions>", f"</ns1:Conditions><ns1:Advice>{genuine}</ns1:Advice>", 1
    )
    return encode(xml[:start] + forged + xml[end:])


def forged_sibling(encoded: str, victim: str, attacker: str) -> str:
    """Signature wrapping: an unsigned forged assertion placed before the genuine one."""
    xml = decode(encoded)
    start, end = _assertion_span(xml)
    genuine = xml[start:end]
    sig_start = genuine.index("<ns2:Signature ")
    sig_end = genuine.index("</ns2:Signature>") + len("</ns2:Signature>")
    forged = (genuine[:sig_start] + genuine[sig_end:]).replace(victim, attacker)
    forged = forged.replace(' ID="', ' ID="evil-', 1)
    return encode(xml[:start] + forged + genuine + xml[end:])


def tampered(encoded: str, victim: str, attacker: str) -> str:
    """The genuine signed response with the e-mail changed after signing."""
    return encode(decode(encoded).replace(victim, attacker))
