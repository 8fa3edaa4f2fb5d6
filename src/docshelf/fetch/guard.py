"""Decide whether a user-given URL may be fetched, and to which checked addresses.

Server-side request forgery defence, step one: everything here happens before any connection.
`check_url` parses the URL with httpx (the same parser the client uses, so the guard and the
client cannot disagree about which host a URL names), resolves the host once, refuses the URL if
ANY resolved address is not public, and returns the addresses it checked. The client then
connects to exactly those addresses, so a second DNS answer (rebinding) never matters.

Numeric host forms: a host whose last label is a number (WHATWG "ends in a number": all digits,
or 0x followed by hex digits) must be a canonical dotted-quad IPv4 address, otherwise the URL is
refused outright. `2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1` and `1.2.3.4.5` are all
refused whatever they would decode to: inet_aton, getaddrinfo, browsers and proxies disagree on
these forms, and refusing them removes the ambiguity instead of betting on one interpretation.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from docshelf.kit.errors import BadRequest

if TYPE_CHECKING:
    # Imported where used: see fetch.client.
    import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOWED_SCHEMES = frozenset({"http", "https"})

_HEX_DIGITS = frozenset("0123456789abcdef")
# Post-IDNA host names: letters, digits, hyphens and (seen in the wild) underscores.
_LABEL = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Checked in order, before the generic `is_global` fallback: explicit ranges keep the required
# classes refused (with a clear reason) whatever the running Python's ipaddress tables say; those
# tables have changed between patch releases.
_V4_RULES: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("0.0.0.0/32"), "an unspecified address"),
    (_V4("0.0.0.0/8"), "a reserved address"),
    (_V4("127.0.0.0/8"), "a loopback address"),
    (_V4("10.0.0.0/8"), "a private address"),
    (_V4("172.16.0.0/12"), "a private address"),
    (_V4("192.168.0.0/16"), "a private address"),
    (_V4("169.254.0.0/16"), "a link-local address"),
    (_V4("100.64.0.0/10"), "a carrier-grade NAT address"),
    (_V4("224.0.0.0/4"), "a multicast address"),
    (_V4("240.0.0.0/4"), "a reserved address"),
)
_V6_RULES: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::/128"), "an unspecified address"),
    (_V6("::1/128"), "a loopback address"),
    (_V6("fe80::/10"), "a link-local address"),
    (_V6("fc00::/7"), "a private address"),
    # Deprecated site-local space; still routed inside some networks.
    (_V6("fec0::/10"), "a private address"),
    (_V6("ff00::/8"), "a multicast address"),
    # Local-use NAT64 (RFC 8215): translates into whatever the operator chose, so never public.
    (_V6("64:ff9b:1::/48"), "a private address"),
    # Deprecated IPv4-compatible addresses (::a.b.c.d); nothing legitimate uses them.
    (_V6("::/96"), "a reserved address"),
)
# Well-known NAT64 prefix (RFC 6052): DNS64 resolvers hand these out for IPv4-only hosts, so they
# are legitimate when the embedded IPv4 address is public, and dangerous when it is not.
_NAT64 = _V6("64:ff9b::/96")


class Resolver(Protocol):
    """Resolves a host name to IP address strings (both families, any order)."""

    async def __call__(self, host: str, /) -> list[str]: ...


async def system_resolver(host: str, /) -> list[str]:
    """The default resolver: the operating system's, without blocking the event loop."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [
        str(sockaddr[0])
        for family, _, _, _, sockaddr in infos
        if family in (socket.AF_INET, socket.AF_INET6)
    ]


@dataclass(frozen=True, slots=True)
class Target:
    """One checked address for a URL. Connect to `address`; speak to `host`."""

    url: httpx.URL
    # ASCII (IDNA) host name without a trailing dot, or the canonical IP literal.
    host: str
    port: int
    address: IPAddress
    host_is_ip: bool

    @property
    def pinned_url(self) -> httpx.URL:
        """The URL with its host replaced by the checked address, so the client connects there
        and never resolves the name again."""
        return self.url.copy_with(host=str(self.address))


def refusal_reason(address: IPAddress) -> str | None:
    """Why `address` must not be fetched from (e.g. "a private address"), or None if public."""
    if isinstance(address, ipaddress.IPv4Address):
        for network, reason in _V4_RULES:
            if address in network:
                return reason
        return None if address.is_global else "not a public address"

    if address.scope_id:
        return "a scoped (zone) address"
    # Addresses that carry an IPv4 address are as safe as the IPv4 address they reach.
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        form, v4 = embedded
        inner = refusal_reason(v4)
        return None if inner is None else f"{form} embedding {inner}"
    for network6, reason in _V6_RULES:
        if address in network6:
            return reason
    if address.is_reserved:
        return "a reserved address"
    return None if address.is_global else "not a public address"


def _embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    if address.ipv4_mapped is not None:
        return "an IPv4-mapped address", address.ipv4_mapped
    if address in _NAT64:
        return "a NAT64 address", ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return "a 6to4 address", address.sixtofour
    return None


def normalize_allowed_hosts(hosts: Iterable[str]) -> frozenset[str]:
    """Canonical forms of allowance entries: lower-case IDNA names without a trailing dot, and
    IP addresses in their canonical text form. Raises ValueError for an entry that is neither."""
    normalized: set[str] = set()
    for raw in hosts:
        entry = raw.strip().rstrip(".")
        if not entry:
            continue
        literal = entry[1:-1] if entry.startswith("[") and entry.endswith("]") else entry
        try:
            normalized.add(str(ipaddress.ip_address(literal)))
            continue
        except ValueError:
            pass
        # Ports, paths and credentials have no place in an allowance entry.
        if any(char in entry for char in ":/?#@[]\\ \t"):
            raise ValueError(f"invalid host in the fetch allowance: {raw!r}")
        import httpx

        try:
            name = httpx.URL(f"http://{entry}/").raw_host.decode("ascii").rstrip(".")
        except httpx.InvalidURL as exc:
            raise ValueError(f"invalid host in the fetch allowance: {raw!r}") from exc
        # Non-canonical numeric forms are refused by check_url, so allowing one would be a no-op.
        if not _is_host_name(name) or _ends_in_number(name):
            raise ValueError(f"invalid host in the fetch allowance: {raw!r}")
        normalized.add(name)
    return frozenset(normalized)


def parse_allowed_hosts(value: str) -> frozenset[str]:
    """Parse the comma-separated `fetch_allowed_hosts` setting."""
    return normalize_allowed_hosts(value.split(","))


async def check_url(url: str, *, resolver: Resolver, allowed_hosts: frozenset[str]) -> list[Target]:
    """Refuse `url` (BadRequest) unless it is http(s) and every address its host resolves to is
    public or exempted by `allowed_hosts`. Returns one Target per checked address, in resolver
    order. Hosts in `allowed_hosts`, and addresses listed there, skip only the address check."""
    parsed = _parse(url)
    host = parsed.raw_host.decode("ascii").rstrip(".")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    if not 1 <= port <= 65535:
        raise BadRequest(f"URL refused: port {port} is out of range")
    allowed = normalize_allowed_hosts(allowed_hosts)

    literal = _ip_literal(host)
    if literal is not None:
        reason = None if str(literal) in allowed else refusal_reason(literal)
        if reason is not None:
            # Named as the user typed it: it discloses nothing and they will recognise it.
            raise BadRequest(f"URL refused: {host} is {reason}")
        return [Target(parsed, str(literal), port, literal, host_is_ip=True)]

    if not _is_host_name(host):
        raise BadRequest(f"URL refused: {host!r} is not a valid host name")
    addresses = await _resolve(host, resolver)
    host_allowed = host in allowed
    for address in addresses:
        reason = None if host_allowed or str(address) in allowed else refusal_reason(address)
        if reason is not None:
            # Resolved addresses are not named: echoing them would let a caller map internal DNS.
            raise BadRequest(f"URL refused: {host} resolves to {reason}")
    return [Target(parsed, host, port, address, host_is_ip=False) for address in addresses]


def _parse(url: str) -> httpx.URL:
    import httpx

    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise BadRequest(f"URL refused: invalid URL ({exc})") from None
    if not parsed.scheme:
        raise BadRequest("URL refused: the URL has no scheme (use http or https)")
    if parsed.scheme not in ALLOWED_SCHEMES:
        raise BadRequest(f"URL refused: scheme {parsed.scheme!r} is not allowed")
    if parsed.userinfo:
        raise BadRequest("URL refused: user names and passwords in URLs are not allowed")
    if not parsed.raw_host:
        raise BadRequest("URL refused: the URL has no host")
    return parsed


def _ip_literal(host: str) -> IPAddress | None:
    """The address an IP-literal host names, None for a host name; refuses numeric forms that
    are not canonical (see the module docstring)."""
    if ":" in host:  # httpx only lets ':' into a host inside [brackets], i.e. IPv6.
        if "%" in host:
            raise BadRequest("URL refused: IPv6 zone identifiers are not allowed")
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            raise BadRequest(f"URL refused: {host!r} is not a valid IPv6 address") from None
    if not _ends_in_number(host):
        return None
    try:
        address = ipaddress.IPv4Address(host)  # strict: four decimal parts, no leading zeros
    except ValueError:
        address = None
    if address is None or str(address) != host:
        raise BadRequest(
            f"URL refused: {host!r} is not a canonical IPv4 address (write it as a.b.c.d)"
        )
    return address


def _ends_in_number(host: str) -> bool:
    last = host.rsplit(".", 1)[-1]
    if last.isascii() and last.isdigit():
        return True
    return last[:2] in ("0x", "0X") and set(last[2:].lower()) <= _HEX_DIGITS


def _is_host_name(host: str) -> bool:
    if not host or len(host) > 253:
        return False
    return all(_LABEL.match(label) for label in host.split("."))


async def _resolve(host: str, resolver: Resolver) -> list[IPAddress]:
    try:
        answers = await resolver(host)
    except OSError:
        raise BadRequest(f"URL refused: could not resolve {host}") from None
    addresses: list[IPAddress] = []
    for answer in answers:
        try:
            address = ipaddress.ip_address(answer)
        except ValueError:
            raise BadRequest(f"URL refused: {host} resolves to an invalid address") from None
        if isinstance(address, ipaddress.IPv6Address) and address.scope_id:
            raise BadRequest(f"URL refused: {host} resolves to a scoped (zone) address")
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise BadRequest(f"URL refused: {host} does not resolve to any address")
    return addresses
