"""Which addresses keep the HTTP server on this machine, and the Host/Origin headers it then accepts."""

from __future__ import annotations

import ipaddress
import socket

from mcp.server.transport_security import TransportSecuritySettings

__all__ = ["bind_host", "host_security", "is_ip_literal", "is_loopback", "loopback_security"]


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine: ``localhost``, any address of
    127.0.0.0/8 in any form the system accepts (``127.1``, ``127.0.0.2``, ``2130706433``), ``::1``
    (bracketed or not, also IPv4-mapped ``::ffff:127.x.y.z``). Names other than ``localhost`` are
    not looked up: they count as public."""
    if not host or host != host.strip():
        return False
    if host.lower().rstrip(".") == "localhost":
        return True
    addr = _ip_address(host)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr is not None and addr.is_loopback


def is_ip_literal(host: str) -> bool:
    """Whether ``host`` (a ``Host`` header's name part, bracketed or not) is an address, not a DNS name:
    no DNS-rebinding page can make a browser send one as its own ``Host``."""
    return _ip_address(host) is not None


def bind_host(host: str) -> str:
    """The form of ``host`` the socket layer binds, for the address :func:`is_loopback` judged:
    ``localhost`` for ``localhost.`` (any case; the resolver knows no trailing-dot form), the IPv4
    address of an IPv4-mapped one (``::ffff:127.0.0.1`` binds ``127.0.0.1``: an IPv6 socket would need
    dual-stack, which a host may lack), an IPv6 address without its brackets; anything else as it is.
    The check and the bind agree: what passed as loopback binds loopback or not at all."""
    if host.lower().rstrip(".") == "localhost":
        return "localhost"
    addr = _ip_address(host)
    if isinstance(addr, ipaddress.IPv6Address):
        return str(addr.ipv4_mapped) if addr.ipv4_mapped is not None else host.strip("[]")
    return host


def _ip_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``host`` names as a literal (also the short IPv4 forms ``inet_aton`` takes, which
    the socket layer binds), or ``None`` for a name."""
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if text and all(c in "0123456789abcdefxABCDEFX." for c in text):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    return None


def loopback_security(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection for a loopback bind: the Host (and Origin) a browser or client sends
    must name a loopback address, the bound one included (e.g. ``127.1:8765`` for ``--host 127.1``)."""
    names = ["127.0.0.1", "localhost", "[::1]"]
    for given in dict.fromkeys((host, bind_host(host))):  # as given and as bound (``127.1``, ``localhost.``)
        shown = f"[{given.strip('[]')}]" if ":" in given else given
        if shown not in names:
            names.append(shown)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*(f"{n}:*" for n in names), *names],
        allowed_origins=[f"http://{n}:*" for n in names],
    )


def host_security(host: str) -> TransportSecuritySettings:
    """The Host/Origin checks of an HTTP server bound to ``host``: :func:`loopback_security` on a
    loopback bind; none on a public one (what protects it is the caller's: a bearer token, or a
    warning that anyone who can reach it can read it; Host headers vary with proxies)."""
    if is_loopback(host):
        return loopback_security(host)
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)
