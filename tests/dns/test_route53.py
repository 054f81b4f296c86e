"""The dns exporter against moto's Route53: plain records and aliases through octoDNS, routing
policies (weighted, latency, failover, health checks) kept by dr, zone A to zone B, throttling."""

from __future__ import annotations

import uuid

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from dr.contract import OutcomeStatus
from dr.exporters.dns import DnsExporter
from dr.exporters.dns import reading
from tests.exporters.conftest import statuses

ZONE = "shop.example."


@pytest.fixture
def route53(aws_env, moto_endpoint):
    return boto3.session.Session(region_name="us-east-1").client("route53", endpoint_url=moto_endpoint)


def _complete_listing(parsed, **_):
    parsed.setdefault("IsTruncated", False)  # moto 5 leaves it out of ListHealthChecks; AWS always sends it


_real_client = reading.route53_client


def moto_client(aws):
    client = _real_client(aws)
    client.meta.events.register("after-call.route-53.ListHealthChecks", _complete_listing)
    return client


@pytest.fixture(autouse=True)
def moto_gaps(monkeypatch):
    monkeypatch.setattr(reading, "route53_client", moto_client)


def new_zone(client, name: str = ZONE) -> str:
    return client.create_hosted_zone(Name=name, CallerReference=uuid.uuid4().hex)["HostedZone"]["Id"]


def upsert(client, zone_id: str, *sets: dict) -> None:
    client.change_resource_record_sets(HostedZoneId=zone_id, ChangeBatch={"Changes": [
        {"Action": "UPSERT", "ResourceRecordSet": s} for s in sets]})


def records(name, kind, *values, ttl=300, **extra):
    return {"Name": name, "Type": kind, "TTL": ttl, "ResourceRecords": [{"Value": v} for v in values], **extra}


def fill(client, zone_id: str) -> str:
    check = client.create_health_check(CallerReference=uuid.uuid4().hex, HealthCheckConfig={
        "IPAddress": "10.0.0.10", "Port": 443, "Type": "HTTPS", "ResourcePath": "/healthz"})["HealthCheck"]["Id"]
    upsert(client, zone_id,
           records(f"www.{ZONE}", "A", "10.0.0.10", "10.0.0.11"),
           records(f"api.{ZONE}", "CNAME", "ingress.cluster-a.example.internal.", ttl=900),
           records(ZONE, "MX", "10 mail.shop.example."),
           records(f"mail.{ZONE}", "A", "10.0.0.25"),
           records(f"_sip._tcp.{ZONE}", "SRV", "10 5 5060 sip.shop.example."),
           records(f"txt.{ZONE}", "TXT", '"hello world"'),
           {"Name": f"alias.{ZONE}", "Type": "A", "AliasTarget": {"HostedZoneId": zone_id.split("/")[-1],
                                                                  "DNSName": f"www.{ZONE}", "EvaluateTargetHealth": False}},
           records(f"canary.{ZONE}", "A", "10.0.0.30", SetIdentifier="blue", Weight=90, HealthCheckId=check),
           records(f"canary.{ZONE}", "A", "10.2.0.30", SetIdentifier="green", Weight=10),
           records(f"near.{ZONE}", "A", "10.0.0.40", SetIdentifier="use1", Region="us-east-1"),
           records(f"near.{ZONE}", "A", "10.2.0.40", SetIdentifier="euw1", Region="eu-west-1"),
           records(f"ha.{ZONE}", "A", "10.0.0.50", ttl=60, SetIdentifier="primary", Failover="PRIMARY",
                   HealthCheckId=check),
           records(f"ha.{ZONE}", "A", "10.2.0.50", ttl=60, SetIdentifier="secondary", Failover="SECONDARY"))
    return check


def options(zone_id: str, endpoint: str) -> dict:
    return {"zones": [{"zone": ZONE, "route53": {"hosted_zone_id": zone_id}}],
            "aws": {"endpoint_url": endpoint, "region": "us-east-1", "max_attempts": 4}}


def comparable(client, zone_id: str) -> dict:
    """The zone's sets without its own SOA and NS, aliases into itself without its id."""
    out = {}
    for s in reading.route53_sets(client, zone_id):
        if s["Type"] in ("SOA", "NS") and s["Name"] == ZONE:
            continue
        s = dict(s)
        if "AliasTarget" in s:
            s["AliasTarget"] = {**s["AliasTarget"], "HostedZoneId": "self"}
        if "ResourceRecords" in s:
            s["ResourceRecords"] = sorted(s["ResourceRecords"], key=lambda r: r["Value"])
        out[(s["Name"], s["Type"], s.get("SetIdentifier"))] = s
    return out


def test_zone_a_to_zone_b_with_aliases_and_routing_policies(harness, tmp_path, route53, moto_endpoint):
    zone_a, zone_b = new_zone(route53), new_zone(route53)  # two zones of one name: pinned by id
    check = fill(route53, zone_a)
    opts = options(zone_a, moto_endpoint)
    done = harness.backup(DnsExporter, opts, base_dir=str(tmp_path))
    (artifact,) = done.artifacts
    assert artifact.identity == "route53/shop.example" and artifact.meta["origin"] == f"route53:{zone_a}"
    deps = {(d.kind, d.reference) for d in artifact.dependencies}
    assert {("dns-target", "10.2.0.30"), ("dns-target", "ingress.cluster-a.example.internal"),
            ("route53-health-check", check), ("dns-target", "www.shop.example")} <= deps
    assert artifact.meta["max_ttl"] == 900

    outcomes = harness.restore(DnsExporter, opts, done.artifacts, to=f"route53:{zone_b}")
    by = statuses(outcomes)
    assert by["canary.shop.example. A set=blue"] == OutcomeStatus.RESTORED, outcomes
    assert by["alias.shop.example. Route53Provider/ALIAS"] == OutcomeStatus.RESTORED
    assert not [o for o in outcomes if o.failed], outcomes
    assert comparable(route53, zone_b) == comparable(route53, zone_a)

    again = statuses(harness.restore(DnsExporter, opts, done.artifacts, to=f"route53:{zone_b}"))
    assert set(again.values()) <= {OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED}, again


def test_change_token_is_the_record_set_count_and_a_hash(harness, tmp_path, route53, moto_endpoint):
    zone = new_zone(route53)
    fill(route53, zone)
    first = harness.backup(DnsExporter, options(zone, moto_endpoint), base_dir=str(tmp_path))
    again = harness.backup(DnsExporter, options(zone, moto_endpoint), base_dir=str(tmp_path), parent=first.artifacts)
    assert again.stats["artifacts_reused"] == 1
    upsert(route53, zone, records(f"new.{ZONE}", "A", "10.0.0.99"))
    moved = harness.backup(DnsExporter, options(zone, moto_endpoint), base_dir=str(tmp_path), parent=again.artifacts)
    assert moved.stats["artifacts_reused"] == 0


def test_the_cutover_rewrites_routing_sets_too(harness, tmp_path, route53, moto_endpoint):
    zone_a, zone_b = new_zone(route53), new_zone(route53)
    fill(route53, zone_a)
    opts = options(zone_a, moto_endpoint)
    done = harness.backup(DnsExporter, opts, base_dir=str(tmp_path))
    cutover = {"record-target:10.0.0.50": "10.3.0.50", "record-target:ingress.cluster-a.example.internal":
               "ingress.cluster-b.example.internal"}
    outcomes = {o.item: o for o in harness.restore(DnsExporter, opts, done.artifacts, to=f"route53:{zone_b}",
                                                    remap=cutover)}
    assert "cutover: 10.0.0.50 -> 10.3.0.50" in outcomes["ha.shop.example. A set=primary"].reason
    got = comparable(route53, zone_b)
    assert got[(f"ha.{ZONE}", "A", "primary")]["ResourceRecords"] == [{"Value": "10.3.0.50"}]
    assert got[(f"api.{ZONE}", "CNAME", None)]["ResourceRecords"] == [{"Value": "ingress.cluster-b.example.internal."}]


class _Raw:
    def __init__(self, body: bytes):
        self.body = body

    def stream(self, **_):
        yield self.body


THROTTLED = (b'<ErrorResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><Error><Type>Sender</Type>'
             b'<Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>t</RequestId></ErrorResponse>')


def throttle(monkeypatch, times: int) -> list[str]:
    """Route53 answers Throttling to the first `times` requests of every client dr makes."""
    seen, real = [], reading.route53_client

    def client(aws):
        made, left = real(aws), [times]

        def answer(request, **_):
            seen.append(request.url)
            if left[0] > 0:
                left[0] -= 1
                return AWSResponse(request.url, 400, {}, _Raw(THROTTLED))
            return None
        made.meta.events.register("before-send.route-53", answer)
        return made
    monkeypatch.setattr(reading, "route53_client", client)
    return seen


def test_throttling_is_retried(harness, tmp_path, route53, moto_endpoint, monkeypatch):
    zone = new_zone(route53)
    fill(route53, zone)
    seen = throttle(monkeypatch, 2)
    done = harness.backup(DnsExporter, options(zone, moto_endpoint), base_dir=str(tmp_path))
    assert [a.identity for a in done.artifacts] == ["route53/shop.example"], done.findings
    assert len(seen) > 2


def test_throttling_that_does_not_end_fails_the_zone_with_the_reason(harness, tmp_path, route53, moto_endpoint,
                                                                     monkeypatch):
    zone = new_zone(route53)
    throttle(monkeypatch, 1000)
    opts = options(zone, moto_endpoint)
    opts["aws"]["max_attempts"] = 2
    done = harness.backup(DnsExporter, opts, base_dir=str(tmp_path))
    assert done.artifacts == []
    (error,) = [f for f in done.findings if f["severity"] == "error"]
    assert "Throttling" in error["message"] and "shop.example" in error["message"]


def test_a_private_zone_is_chosen_by_private_when_a_public_one_shares_its_name(harness, tmp_path, route53,
                                                                               moto_endpoint):
    name = f"split-{uuid.uuid4().hex[:8]}.example."
    public = route53.create_hosted_zone(Name=name, CallerReference=uuid.uuid4().hex)["HostedZone"]["Id"]
    private = route53.create_hosted_zone(Name=name, CallerReference=uuid.uuid4().hex,
                                         HostedZoneConfig={"PrivateZone": True},
                                         VPC={"VPCRegion": "us-east-1", "VPCId": "vpc-12345678"})["HostedZone"]["Id"]
    upsert(route53, public, records(f"www.{name}", "A", "203.0.113.10"))
    upsert(route53, private, records(f"www.{name}", "A", "10.0.0.10"))
    aws = {"endpoint_url": moto_endpoint, "region": "us-east-1"}

    ambiguous = harness.backup(DnsExporter, {"zones": [{"zone": name, "route53": {}}], "aws": aws},
                               base_dir=str(tmp_path))
    (error,) = [f for f in ambiguous.findings if f["severity"] == "error"]
    assert "2 hosted zones" in error["message"] and "hosted_zone_id" in error["message"]

    done = harness.backup(DnsExporter, {"zones": [{"zone": name, "route53": {"private": True}}], "aws": aws},
                          base_dir=str(tmp_path))
    (artifact,) = done.artifacts
    assert artifact.meta["origin"] == f"route53:{private}"
    assert {d.reference for d in artifact.dependencies} == {"10.0.0.10"}


def test_restored_content_reads_the_route53_zone_back(harness, tmp_path, route53, moto_endpoint):
    """What dr drill compares: equal after a restore (aliases, routing sets, the cutover); a
    changed record and a re-weighted set each differ."""
    from dr.contract import ExportContext, RestoreRequest
    from dr.drills.comparing import difference
    from dr.repository.reading import ArtifactReader
    zone_a, zone_b = new_zone(route53), new_zone(route53)
    fill(route53, zone_a)
    opts = options(zone_a, moto_endpoint)
    done = harness.backup(DnsExporter, opts, base_dir=str(tmp_path))
    (artifact,) = done.artifacts
    cutover = {"record-target:10.0.0.50": "10.3.0.50"}

    def compared(remap=()) -> str:
        exporter = DnsExporter(ExportContext("src", DnsExporter.Options(**opts), "/nonexistent"))
        reader = ArtifactReader(harness.repo)
        (content,) = exporter.restored_content(done.artifacts, reader, RestoreRequest(to=f"route53:{zone_b}",
                                                                                      remap=dict(remap)))
        return difference(content, artifact, reader)
    harness.restore(DnsExporter, opts, done.artifacts, to=f"route53:{zone_b}", remap=cutover)
    assert compared(cutover) == ""
    assert "fingerprint" in compared()  # the zone holds the cutover, not the backup as it was
    upsert(route53, zone_b, records(f"www.{ZONE}", "A", "10.9.9.9"))
    assert "fingerprint" in compared(cutover)
    harness.restore(DnsExporter, opts, done.artifacts, to=f"route53:{zone_b}", remap=cutover, overwrite=True)
    assert compared(cutover) == ""
    upsert(route53, zone_b, records(f"canary.{ZONE}", "A", "10.2.0.30", SetIdentifier="green", Weight=50))
    assert "fingerprint" in compared(cutover)
