"""The dns exporter against real bind9 servers: AXFR (with TSIG), RFC 2136 replay, faults."""

from __future__ import annotations

import json
import re

import dns.query
import dns.update
import pytest

from dr.contract import ExportContext, OutcomeStatus, RestoreRequest
from dr.drills.comparing import difference
from dr.exporters.dns import DnsExporter
from dr.exporters.dns import reading
from dr.repository.reading import ArtifactReader
from tests.dns.conftest import TSIG_SECRET, axfr, soa_serial, zone_options
from tests.exporters.conftest import statuses


@pytest.fixture(autouse=True)
def tsig_secret(monkeypatch):
    monkeypatch.setenv("DR_TEST_TSIG", TSIG_SECRET)


def backup(harness, tmp_path, opts, **kw):
    return harness.backup(DnsExporter, opts, base_dir=str(tmp_path), **kw)


def test_a_zone_of_every_type_goes_from_one_bind9_to_another_record_by_record(harness, tmp_path, bind, bind_empty):
    done = backup(harness, tmp_path, zone_options(bind.port, "example.test"))
    (artifact,) = done.artifacts
    assert artifact.identity == "example.test" and artifact.meta["serial"] == 2026010101
    assert artifact.meta["unmodelled_types"] == ["DNAME", "HINFO", "RP"]
    assert artifact.meta["max_ttl"] == 600  # api CNAME: the TTL floor of a cutover
    deps = {(d.reference, d.detail) for d in artifact.dependencies}
    assert ("ingress.cluster-a.example.internal", "api.example.test. CNAME ttl=600") in deps
    assert ("10.0.0.10", "www.example.test. A ttl=300") in deps

    to = f"dns://127.0.0.1:{bind_empty.port}/example.test"
    outcomes = harness.restore(DnsExporter, zone_options(bind.port, "example.test"), done.artifacts, to=to)
    by = statuses(outcomes)
    assert by["example.test. NS"] == OutcomeStatus.SKIPPED
    assert by["ns1.example.test. A"] == OutcomeStatus.UNCHANGED
    assert by["info.example.test. HINFO"] == OutcomeStatus.RESTORED
    assert all(s in (OutcomeStatus.RESTORED, OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED) for s in by.values()), \
        [o for o in outcomes if o.failed]
    assert axfr(bind_empty.port, "example.test") == axfr(bind.port, "example.test")

    again = harness.restore(DnsExporter, zone_options(bind.port, "example.test"), done.artifacts, to=to)
    assert {s for s in statuses(again).values()} <= {OutcomeStatus.UNCHANGED, OutcomeStatus.SKIPPED}, \
        [o for o in again if o.failed]


def test_tsig_transfer_and_update(harness, tmp_path, bind, bind_empty):
    opts = zone_options(bind.port, "keyed.test", keyed=True)
    done = backup(harness, tmp_path, opts)
    assert [a.identity for a in done.artifacts] == ["keyed.test"], done.findings
    assert TSIG_SECRET not in json.dumps([a.to_json() for a in done.artifacts])
    outcomes = harness.restore(DnsExporter, opts, done.artifacts, to=f"dns://127.0.0.1:{bind_empty.port}/keyed.test")
    assert statuses(outcomes)["www.keyed.test. A"] == OutcomeStatus.RESTORED
    assert axfr(bind_empty.port, "keyed.test", keyed=True) == axfr(bind.port, "keyed.test", keyed=True)


def test_without_the_key_the_transfer_is_refused_and_said_so(harness, tmp_path, bind):
    done = backup(harness, tmp_path, zone_options(bind.port, "keyed.test", "example.test"))
    assert [a.identity for a in done.artifacts] == ["example.test"]
    (error,) = [f for f in done.findings if f["severity"] == "error"]
    assert error["code"] == "dns-zone-unreadable" and "keyed.test" in error["message"]


def test_axfr_refused_is_an_error_finding(harness, tmp_path, bind):
    done = backup(harness, tmp_path, zone_options(bind.port, "refused.test"))
    assert done.artifacts == []
    (error,) = [f for f in done.findings if f["severity"] == "error"]
    assert "refused.test" in error["message"] and "AXFR" in error["message"]


def test_an_unchanged_zone_is_reused_by_its_serial(harness, tmp_path, bind):
    first = backup(harness, tmp_path, zone_options(bind.port, "example.test"))
    assert first.artifacts[0].meta["serial"] == soa_serial(bind.port, "example.test")
    second = backup(harness, tmp_path, zone_options(bind.port, "example.test"), parent=first.artifacts)
    assert second.stats["artifacts_reused"] == 1


def _bump(port: int, zone: str, name: str, address: str) -> None:
    update = dns.update.UpdateMessage(zone)
    update.replace(name, 300, "A", address)
    dns.query.tcp(update, "127.0.0.1", port=port, timeout=5)


def test_a_zone_that_moves_during_the_transfer_is_read_again(harness, tmp_path, bind, monkeypatch):
    real, moves = reading.zone_from_xfr, iter(["10.9.0.1"])

    def moving(*args, **kwargs):
        address = next(moves, None)
        if address:  # an update lands between the serial read and the transfer
            _bump(bind.port, "example.test", "moved", address)
        return real(*args, **kwargs)

    monkeypatch.setattr(reading, "zone_from_xfr", moving)
    done = backup(harness, tmp_path, zone_options(bind.port, "example.test"))
    (artifact,) = done.artifacts
    assert artifact.meta["serial"] == soa_serial(bind.port, "example.test")
    assert ["moved", "A", 300, ["10.9.0.1"]] in json.loads(ArtifactReader(harness.repo).read(artifact))["rrsets"]


def test_a_zone_that_never_settles_fails_clearly(harness, tmp_path, bind, monkeypatch):
    real, count = reading.zone_from_xfr, iter(range(100))

    def moving(*args, **kwargs):
        _bump(bind.port, "example.test", "busy", f"10.8.0.{next(count)}")
        return real(*args, **kwargs)

    monkeypatch.setattr(reading, "zone_from_xfr", moving)
    done = backup(harness, tmp_path, zone_options(bind.port, "example.test"))
    assert done.artifacts == []
    (error,) = [f for f in done.findings if f["severity"] == "error"]
    assert "kept changing during the transfer" in error["message"]


def test_dry_run_shows_a_diff_per_record_and_the_cutover_rewrites_targets(harness, tmp_path, bind, bind_empty):
    opts = zone_options(bind.port, "example.test")
    done = backup(harness, tmp_path, opts)
    to = f"dns://127.0.0.1:{bind_empty.port}/example.test"
    cutover = {"record-target:10.0.0.10": "10.1.0.10", "record-target:ingress.cluster-a.example.internal":
               "ingress.cluster-b.example.internal"}
    harness.restore(DnsExporter, opts, done.artifacts, to=to)  # the zone as it was (the backup) ...
    before = axfr(bind_empty.port, "example.test")

    dry = {o.item: o for o in harness.restore(DnsExporter, opts, done.artifacts, to=to, remap=cutover,
                                              dry_run=True, overwrite=True)}
    assert dry["www.example.test. A"].status == OutcomeStatus.PLANNED
    assert "replace A ttl 300 10.0.0.10, 10.0.0.11 with A ttl 300 10.0.0.11, 10.1.0.10" in dry["www.example.test. A"].reason
    assert "cutover: 10.0.0.10 -> 10.1.0.10" in dry["www.example.test. A"].reason
    assert dry["mail.example.test. A"].status == OutcomeStatus.UNCHANGED
    assert axfr(bind_empty.port, "example.test") == before  # the dry run changed nothing

    refused = statuses(harness.restore(DnsExporter, opts, done.artifacts, to=to, remap=cutover))
    assert refused["api.example.test. CNAME"] == OutcomeStatus.CONFLICT  # ... differs: only with --overwrite
    assert axfr(bind_empty.port, "example.test") == before

    cut = statuses(harness.restore(DnsExporter, opts, done.artifacts, to=to, remap=cutover, overwrite=True))
    assert cut["api.example.test. CNAME"] == OutcomeStatus.RESTORED and cut["www.example.test. A"] == OutcomeStatus.RESTORED
    after = axfr(bind_empty.port, "example.test")
    assert ("api", 600, "CNAME", "ingress.cluster-b.example.internal.") in after
    assert ("www", 300, "A", "10.1.0.10") in after and ("www", 300, "A", "10.0.0.10") not in after


def test_an_unreachable_destination_fails_every_record_with_the_reason(harness, tmp_path, bind):
    opts = zone_options(bind.port, "example.test")
    done = backup(harness, tmp_path, opts)
    outcomes = harness.restore(DnsExporter, opts, done.artifacts, to="dns://127.0.0.1:9/example.test")
    failed = [o for o in outcomes if o.status == OutcomeStatus.FAILED]
    assert failed and all("127.0.0.1:9" in o.reason or "Timeout" in o.reason or "refused" in o.reason.lower()
                          for o in failed)
    bad = harness.restore(DnsExporter, opts, done.artifacts, to="ftp://nowhere")
    assert [(o.status, "route53:HOSTED_ZONE_ID or dns://" in o.reason) for o in bad] == [(OutcomeStatus.FAILED, True)]


def _compared(harness, opts, artifacts, **request) -> dict:
    """What dr drill finds of each zone: "" or what differs from the backup."""
    exporter = DnsExporter(ExportContext("src", DnsExporter.Options(**opts), "/nonexistent"))
    reader = ArtifactReader(harness.repo)
    by_identity = {a.identity: a for a in artifacts}
    return {c.item: difference(c, by_identity[c.item], reader)
            for c in exporter.restored_content(artifacts, reader, RestoreRequest(**request))}


def test_restored_content_reads_the_zone_back_and_compares_its_record_sets(harness, tmp_path, bind, bind_empty):
    """Every type, after a restore: equal whatever spelling bind gives back; a cutover the zone
    does not show, a changed record and a deleted one each differ."""
    opts = zone_options(bind.port, "example.test")
    done = backup(harness, tmp_path, opts)
    to = f"dns://127.0.0.1:{bind_empty.port}/example.test"
    harness.restore(DnsExporter, opts, done.artifacts, to=to, overwrite=True)
    assert _compared(harness, opts, done.artifacts, to=to) == {"example.test": ""}
    cutover = {"record-target:10.0.0.10": "10.1.0.10"}
    assert "fingerprint" in _compared(harness, opts, done.artifacts, to=to, remap=cutover)["example.test"]
    harness.restore(DnsExporter, opts, done.artifacts, to=to, remap=cutover, overwrite=True)
    assert _compared(harness, opts, done.artifacts, to=to, remap=cutover) == {"example.test": ""}

    _bump(bind_empty.port, "example.test", "mail", "10.9.9.9")  # another address
    assert "fingerprint" in _compared(harness, opts, done.artifacts, to=to, remap=cutover)["example.test"]
    update = dns.update.UpdateMessage("example.test")
    update.delete("info", "HINFO")
    dns.query.tcp(update, "127.0.0.1", port=bind_empty.port, timeout=5)
    harness.restore(DnsExporter, opts, done.artifacts, to=to, overwrite=True)  # mail back; HINFO too
    assert _compared(harness, opts, done.artifacts, to=to) == {"example.test": ""}
    update = dns.update.UpdateMessage("example.test")
    update.delete("info", "HINFO")
    dns.query.tcp(update, "127.0.0.1", port=bind_empty.port, timeout=5)
    found, total = re.search(r"fingerprint (\d+)/(\d+) record sets", _compared(
        harness, opts, done.artifacts, to=to)["example.test"]).groups()
    assert int(found) == int(total) - 1  # one record set fewer
    harness.restore(DnsExporter, opts, done.artifacts, to=to, overwrite=True)
