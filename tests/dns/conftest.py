"""bind9 servers (Debian) and moto's Route53 for the dns exporter's tests."""

from __future__ import annotations

import base64

import dns.message
import dns.query
import dns.rdatatype
import dns.tsigkeyring
import dns.zone
import pytest

from tests.exporters.conftest import harness  # noqa: F401  (the repository round-trip harness)
from tests.servers import NamedServer

SOA = "@ IN SOA ns1 hostmaster 2026010101 3600 600 86400 300\n@ IN NS ns1\nns1 IN A 127.0.0.1\n"
TLSA = "3 1 1 " + "ab" * 32
#: one of every type octoDNS models, plus three it does not (HINFO, RP, DNAME)
FULL = SOA + f"""\
www 300 IN A 10.0.0.10
www 300 IN A 10.0.0.11
v6 IN AAAA 2001:db8::10
app 60 IN CNAME www
api 600 IN CNAME ingress.cluster-a.example.internal.
@ IN MX 10 mail
mail IN A 10.0.0.25
_https._tcp IN SRV 10 5 443 www
@ IN TXT "v=spf1 -all"
@ IN CAA 0 issue "letsencrypt.org"
ptr IN PTR www
_443._tcp.www IN TLSA {TLSA}
host IN SSHFP 1 1 {"cd" * 20}
naptr IN NAPTR 100 10 "U" "E2U+sip" "!^.*$!sip:info@example.test!" .
loc IN LOC 52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m
svc IN SVCB 1 www alpn="h2"
@ IN HTTPS 1 . alpn="h2,h3"
spf IN SPF "v=spf1 -all"
info IN HINFO "x86" "Linux"
rp IN RP hostmaster info
old IN DNAME new.example.test.
"""
TSIG_NAME, TSIG_SECRET = "dr-test", base64.b64encode(b"a shared secret for the tests, 32b").decode()


@pytest.fixture(scope="module")
def bind(tmp_path_factory):
    """Server A: example.test (every type), keyed.test (TSIG only), refused.test (no transfers)."""
    server = NamedServer(str(tmp_path_factory.mktemp("bind-a")), {
        "example.test": {"records": FULL},
        "keyed.test": {"records": SOA + "www IN A 10.0.0.10\n", "transfer": f"key {TSIG_NAME};",
                       "update": f"key {TSIG_NAME};"},
        "refused.test": {"records": SOA + "www IN A 10.0.0.10\n", "transfer": "none;"},
    }, {TSIG_NAME: TSIG_SECRET})
    with server:
        yield server


@pytest.fixture(scope="module")
def bind_empty(tmp_path_factory):
    """Server B: the same zones, empty (a SOA, its name server and its address)."""
    server = NamedServer(str(tmp_path_factory.mktemp("bind-b")), {
        "example.test": {"records": SOA},
        "keyed.test": {"records": SOA, "transfer": f"key {TSIG_NAME};", "update": f"key {TSIG_NAME};"},
    }, {TSIG_NAME: TSIG_SECRET})
    with server:
        yield server


def axfr(port: int, zone: str, keyed: bool = False) -> set[tuple[str, int, str, str]]:
    """Every record of the zone but its SOA: (name, ttl, type, rdata)."""
    auth = {"keyring": dns.tsigkeyring.from_text({TSIG_NAME: TSIG_SECRET}), "keyname": TSIG_NAME} if keyed else {}
    got = dns.zone.from_xfr(dns.query.xfr("127.0.0.1", zone, port=port, **auth))
    return {(str(name), ttl, dns.rdatatype.to_text(rdata.rdtype), rdata.to_text())
            for name, ttl, rdata in got.iterate_rdatas() if rdata.rdtype != dns.rdatatype.SOA}


def soa_serial(port: int, zone: str) -> int:
    answer = dns.query.udp(dns.message.make_query(zone, "SOA"), "127.0.0.1", port=port, timeout=2)
    return answer.answer[0][0].serial


def zone_options(port: int, *zones: str, keyed: bool = False) -> dict:
    axfr = {"server": "127.0.0.1", "port": port}
    if keyed:
        axfr["tsig"] = {"name": TSIG_NAME, "secret_env": "DR_TEST_TSIG"}
    return {"zones": [{"zone": z, "axfr": axfr} for z in zones], "timeout_seconds": 5}
