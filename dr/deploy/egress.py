"""The NetworkPolicy's egress, from the endpoints the sources and targets connect to.

A NetworkPolicy selects peers by IP block or by namespace and pod labels, never by host name.
So: an IP address gets an ipBlock of itself alone; an in-cluster service name
(`name.namespace.svc[.cluster.local]`) gets its namespace (the service's pods' labels are not
in the plan); a public host name cannot be expressed, and gets its port open to any
destination, which the rendered comment and the command's output both say. DNS to kube-dns
is always allowed: every other name needs it.

The API server is not a pod: traffic to `kubernetes.default.svc` reaches the control plane's
addresses, on 443 or on 6443 behind the service, and no namespace selects it. Given its CIDRs
(`--api-server-cidr`), those get 443 and 6443; without them the two ports are open to any
address, which is said like a public host's port.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

DEFAULT_PORTS = {"https": 443, "http": 80, "ssh": 22, "git": 9418, "s3": 443, "grpc": 443}
_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!\d+(?:/|$))")  # git's user@host:path
_SERVICE = re.compile(r"^[a-z0-9-]+\.([a-z0-9-]+)\.svc(\.cluster\.local)?$")
_API_SERVER = re.compile(r"^kubernetes\.default(\.svc(\.cluster\.local)?)?$")
API_SERVER_PORTS = {443, 6443}
DNS_RULE = {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}


@dataclass
class Egress:
    rules: list[dict]
    public: list[str] = field(default_factory=list)  # host:port that only a port rule allows
    unparsed: list[str] = field(default_factory=list)  # endpoints dr could not read
    api_server_open: bool = False  # the API server's ports are open to any address (no CIDR given)


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


def egress(endpoints: list[str], api_server_cidrs: list[str] = ()) -> Egress:
    ips: dict[str, set[int]] = {}
    api_server = False
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
        if _API_SERVER.match(host):
            api_server = True
        elif _ip(host):
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
    if api_server:
        rules.append(_api_server_rule(api_server_cidrs))
    if public:
        rules.append({"ports": _ports(set(public))})
    shown = sorted(f"{h}:{p}" for p, hosts in public.items() for h in hosts)
    return Egress(rules, shown, sorted(set(unparsed)), api_server_open=api_server and not api_server_cidrs)


def _api_server_rule(cidrs: list[str]) -> dict:
    rule = {"ports": _ports(API_SERVER_PORTS)}
    if cidrs:
        rule = {"to": [{"ipBlock": {"cidr": str(ipaddress.ip_network(c, strict=False))}} for c in sorted(cidrs)],
                **rule}
    return rule


def _ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


def _ports(ports: set[int]) -> list[dict]:
    return [{"protocol": "TCP", "port": p} for p in sorted(ports)]
