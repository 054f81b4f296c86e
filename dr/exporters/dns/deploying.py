"""What a dns source needs in a pod (contract v2 run_needs): its AXFR servers (TCP, the port the
plan gives, 53 by default), each zone's TSIG secret (from the environment variable or the file
the plan names), and for Route53 zones the Route53 endpoint and the AWS keys.
"""

from __future__ import annotations

import os

from dr.contract import AWS_CREDENTIALS, Credential, RunNeeds
from dr.exporters.dns.options import DnsOptions, Tsig

ROUTE53 = "https://route53.amazonaws.com"  # global: one endpoint whatever the region


def run_needs(options: DnsOptions, base_dir: str, source: str) -> RunNeeds:
    needs = RunNeeds()
    for zone in options.zones:
        if zone.axfr is not None:
            server = f"[{zone.axfr.server}]" if ":" in zone.axfr.server else zone.axfr.server
            _add(needs.endpoints, f"{server}:{zone.axfr.port}")
            if zone.axfr.tsig is not None:
                _add(needs.credentials, _tsig(zone.axfr.tsig, base_dir, source))
    if any(zone.route53 is not None for zone in options.zones):
        _add(needs.endpoints, options.aws.endpoint_url or ROUTE53)
        needs.credentials += [c for c in AWS_CREDENTIALS if c not in needs.credentials]
    return needs


def _tsig(tsig: Tsig, base_dir: str, source: str) -> Credential:
    what = f"the base64 secret of TSIG key {tsig.name} ({tsig.algorithm})"
    key = f"dns-tsig-{source}-{tsig.name.rstrip('.')}"
    if tsig.secret_env is not None:
        return Credential(key, what, env=tsig.secret_env)
    return Credential(key, what, path=os.path.join(base_dir, tsig.secret_file))


def _add(items: list, item) -> None:
    """Zones often share a server and a key: each is asked for once."""
    if item not in items:
        items.append(item)
