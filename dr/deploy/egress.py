"""The NetworkPolicy's egress, from the endpoints the sources and targets connect to.

A NetworkPolicy selects peers by IP block or by namespace and pod labels, never by host name.
So: an IP address gets an ipBlock of itself alone; an in-cluster service name
(`name.namespace.svc[.cluster.local]`) gets its namespace (the service's pods' labels are not
in the plan); a public host name cannot be expressed, and gets its port open to any
destination, which the rendered comment and the command's output both say. DNS to kube-dns
is always allowed: every other name needs it.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

DEFAULT_PORTS = {"https": 443, "http": 80, "ssh": 22, "git": 9418, "s3": 443, "grpc": 443}
_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!\d+(?:/|$))")  # git's user@host:path
_SERVICE = re.compile(r"^[a-z0-9-]+\.([a-z0-9-]+)\.svc(\.cluster\.local)?$")
DNS_RULE = {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}


@dataclass
class Egress:
    rules: list[dict]
    public: list[str] = field(default_factory=list)  # host:port that only a port rule allows
    unparsed: list[str] = field(default_factory=list)  # endpoints dr could not read


def host_port(endpoint: str) -> tuple[str, int] | None:
    """(host, port) of a URL, an scp-like git address or host:port; None when neither."""
    scp = _SCP.match(endpoint)
    if scp and "://" not in endpoint:
        return scp.group(1).lower(), 22
    parts = urlsplit(endpoint if "://" in endpoint else f"tcp://{endpoint}")
    try:
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    return (parts.hostname.lower(), port) if parts.hostname and port else None


def egress(endpoints: list[str]) -> Egress:
    ips: dict[str, set[int]] = {}
    namespaces: dict[str, set[int]] = {}
    public: dict[int, set[str]] = {}
    unparsed = []
    for endpoint in endpoints:
        found = host_port(endpoint)
        if found is None:
            unparsed.append(endpoint)
            continue
        host, port = found
        service = _SERVICE.match(host)
        if _ip(host):
            ips.setdefault(host, set()).add(port)
        elif service:
            namespaces.setdefault(service.group(1), set()).add(port)
        else:
            public.setdefault(port, set()).add(host)
    rules = [DNS_RULE]
    for host in sorted(ips):
        ip = ipaddress.ip_address(host)
        rules.append({"to": [{"ipBlock": {"cidr": f"{ip}/{ip.max_prefixlen}"}}], "ports": _ports(ips[host])})
    for namespace in sorted(namespaces):
        rules.append({"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}],
                      "ports": _ports(namespaces[namespace])})
    if public:
        rules.append({"ports": _ports(set(public))})
    shown = sorted(f"{h}:{p}" for p, hosts in public.items() for h in hosts)
    return Egress(rules, shown, sorted(set(unparsed)))


def _ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


def _ports(ports: set[int]) -> list[dict]:
    return [{"protocol": "TCP", "port": p} for p in sorted(ports)]
