"""The dns exporter's RFC 2136 replay in batches, against real bind9 servers: a refused batch is
split until the refused record set alone fails with the server's rcode, a record the server
accepts and silently skips fails on the read-back, and documents of format 1 (written before
format 2) still restore. Route53's change batches stay within the API's limits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from octodns_bind import AxfrSource

from dr.contract import OutcomeStatus
from dr.exporters.dns import DnsExporter, rfc2136
from dr.exporters.dns.records import OCTODNS_RFC2136_TYPES
from dr.exporters.dns.writing import route53_batches
from tests.dns.conftest import SOA, TSIG_NAME, TSIG_SECRET, axfr, zone_options
from tests.exporters.conftest import statuses
from tests.servers import NamedServer

ZONE = "policy.test"
BAD = f"bad.{ZONE}."
#: bind refuses every update that touches BAD (update-policy: first matching rule wins)
POLICY = f"update-policy {{ deny {TSIG_NAME} name {BAD} ANY; grant {TSIG_NAME} zonesub ANY; }};"
RECORDS = SOA + "".join(f"host{i} IN A 10.0.0.{i}\n" for i in range(40)) + \
    "bad IN A 10.0.1.1\nclash IN CNAME host1\nmail IN MX 10 host2\n"
FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "example.test.v1.json")


class PolicyServer(NamedServer):
    """bind9 whose zones take updates under an update-policy (NamedServer writes allow-update)."""

    def _argv(self, port: int) -> list[str]:
        argv = super()._argv(port)
        conf = Path(self.folder) / "named.conf"
        conf.write_text(conf.read_text().replace(f"allow-update {{ key {TSIG_NAME}; }};", POLICY))
        return argv


@pytest.fixture(autouse=True)
def tsig_secret(monkeypatch):
    monkeypatch.setenv("DR_TEST_TSIG", TSIG_SECRET)


@pytest.fixture(scope="module")
def policy_source(tmp_path_factory):
    with NamedServer(str(tmp_path_factory.mktemp("bind-src")), {ZONE: {"records": RECORDS}},
                     {TSIG_NAME: TSIG_SECRET}) as source:
        yield source


@pytest.fixture
def policy_servers(policy_source, tmp_path):
    """The zone on a source bind9, and empty on a destination that refuses updates of BAD; the
    destination already has an A record where the backup has a CNAME (bind skips such an add)."""
    with PolicyServer(str(tmp_path / "bind-dst"), {ZONE: {"records": SOA + "clash IN A 10.0.9.9\n",
                                                          "update": f"key {TSIG_NAME};"}},
                      {TSIG_NAME: TSIG_SECRET}) as dest:
        yield policy_source, dest


@pytest.mark.parametrize("max_wire", [rfc2136.MAX_WIRE, 300])  # one batch; ~8 batches in flight on one connection
def test_a_refused_record_fails_alone_and_the_rest_of_its_batch_lands(harness, tmp_path, policy_servers,
                                                                     monkeypatch, max_wire):
    source, dest = policy_servers
    monkeypatch.setattr(rfc2136, "MAX_WIRE", max_wire)
    opts = zone_options(source.port, ZONE, keyed=True)
    done = harness.backup(DnsExporter, opts, base_dir=str(tmp_path))
    assert [a.identity for a in done.artifacts] == [ZONE], done.findings
    outcomes = {o.item: o for o in harness.restore(DnsExporter, opts, done.artifacts,
                                                   to=f"dns://127.0.0.1:{dest.port}/{ZONE}")}
    bad = outcomes[f"{BAD} A"]
    assert bad.status == OutcomeStatus.FAILED and "refused the update: REFUSED" in bad.reason
    clash = outcomes[f"clash.{ZONE}. CNAME"]  # accepted in a message that succeeded, but not applied
    assert clash.status == OutcomeStatus.FAILED and "shows nothing there" in clash.reason, clash.reason
    landed = axfr(dest.port, ZONE, keyed=True)
    for i in range(40):
        assert outcomes[f"host{i}.{ZONE}. A"].status == OutcomeStatus.RESTORED
        assert (f"host{i}", 300, "A", f"10.0.0.{i}") in landed
    assert outcomes[f"mail.{ZONE}. MX"].status == OutcomeStatus.RESTORED
    assert not [r for r in landed if r[0] == "bad"]
    assert [o.item for o in outcomes.values() if o.failed] == [f"{BAD} A", f"clash.{ZONE}. CNAME"]


def test_a_dry_run_sends_nothing_and_names_each_change(harness, tmp_path, policy_servers):
    source, dest = policy_servers
    opts = zone_options(source.port, ZONE, keyed=True)
    done = harness.backup(DnsExporter, opts, base_dir=str(tmp_path))
    before = axfr(dest.port, ZONE, keyed=True)
    dry = {o.item: o for o in harness.restore(DnsExporter, opts, done.artifacts, dry_run=True,
                                              to=f"dns://127.0.0.1:{dest.port}/{ZONE}")}
    assert axfr(dest.port, ZONE, keyed=True) == before
    assert dry[f"{BAD} A"].status == OutcomeStatus.PLANNED and "would create A ttl 300 10.0.1.1" in dry[f"{BAD} A"].reason


def test_a_format_1_document_still_restores_record_by_record(harness, tmp_path, bind, bind_empty):
    """A document as dr wrote it before format 2 (octoDNS's zone form plus `unmodelled`, taken from
    example.test by that version) restores into an empty zone equal to the source."""
    class OldDocument:  # the repository gets the format-1 bytes in place of what this version writes
        def __init__(self, sink):
            self.sink, self.source = sink, sink.source

        def write(self, kind, identity, content, **kwargs):
            return self.sink.write(kind, identity, Path(FIXTURE).read_bytes(), **kwargs)

    opts = zone_options(bind.port, "example.test")
    done = harness.backup(DnsExporter, opts, base_dir=str(tmp_path), wrap_sink=OldDocument)
    to = f"dns://127.0.0.1:{bind_empty.port}/example.test"
    outcomes = harness.restore(DnsExporter, opts, done.artifacts, to=to, overwrite=True)
    by = statuses(outcomes)
    assert by["info.example.test. HINFO"] in (OutcomeStatus.RESTORED, OutcomeStatus.UNCHANGED)
    assert by["www.example.test. A"] in (OutcomeStatus.RESTORED, OutcomeStatus.UNCHANGED)
    assert not [o for o in outcomes if o.failed], [o for o in outcomes if o.failed]
    assert axfr(bind_empty.port, "example.test") == axfr(bind.port, "example.test")


def test_unmodelled_types_are_those_octodns_does_not_write_over_rfc2136():
    assert OCTODNS_RFC2136_TYPES == frozenset(AxfrSource.SUPPORTS)


def test_route53_batches_stay_within_the_api_limits():
    big = [(f"k{i}", {"Name": f"n{i}.", "Type": "TXT", "ResourceRecords": [{"Value": '"' + "x" * 3000 + '"'}]}, "")
           for i in range(12)]
    many = [(f"m{i}", {"Name": f"m{i}.", "Type": "A", "ResourceRecords": [{"Value": "10.0.0.1"}, {"Value": "10.0.0.2"}]},
             "") for i in range(600)]
    alias = [("a", {"Name": "a.", "Type": "A", "AliasTarget": {"DNSName": "b.", "HostedZoneId": "Z",
                                                                "EvaluateTargetHealth": False}}, "")]
    batches = list(route53_batches(big + many + alias))
    assert [item for batch in batches for item in batch] == big + many + alias  # all, in order, once
    for batch in batches:
        values = [rr["Value"] for _, s, _ in batch for rr in s.get("ResourceRecords", [])]
        assert 2 * sum(map(len, values)) <= 32_000 and 2 * len(values) <= 1000
    assert len(batches) >= 4  # 12 x 3002 characters x 2 need two; 1200 values x 2 need three more


def test_a_zone_read_by_axfr_restores_into_route53_through_octodns(harness, tmp_path, bind, aws_env, moto_endpoint,
                                                                   monkeypatch):
    """Rows become octoDNS records only here; types Route53 cannot hold are skipped, with the reason."""
    import boto3

    from dr.exporters.dns import reading
    from tests.dns.test_route53 import moto_client, new_zone

    monkeypatch.setattr(reading, "route53_client", moto_client)
    client = boto3.session.Session(region_name="us-east-1").client("route53", endpoint_url=moto_endpoint)
    zone_id = new_zone(client, "example.test.")
    opts = {**zone_options(bind.port, "example.test"), "aws": {"endpoint_url": moto_endpoint, "region": "us-east-1"}}
    done = harness.backup(DnsExporter, opts, base_dir=str(tmp_path))
    outcomes = {o.item: o for o in harness.restore(DnsExporter, opts, done.artifacts, to=f"route53:{zone_id}")}
    assert outcomes["www.example.test. A"].status == OutcomeStatus.RESTORED, outcomes["www.example.test. A"]
    assert outcomes["api.example.test. CNAME"].status == OutcomeStatus.RESTORED
    assert outcomes["info.example.test. HINFO"].status == OutcomeStatus.SKIPPED
    sets = {(s["Name"], s["Type"]): s for s in reading.route53_sets(client, zone_id)}
    assert sorted(r["Value"] for r in sets[("www.example.test.", "A")]["ResourceRecords"]) == ["10.0.0.10", "10.0.0.11"]
    assert sets[("api.example.test.", "CNAME")]["TTL"] == 600
    assert outcomes["old.example.test. DNAME"].status == OutcomeStatus.SKIPPED  # Route53 has no DNAME
    assert not [o for o in outcomes.values() if o.status == OutcomeStatus.UNCHANGED]  # the zone was empty
