"""The certificates exporter against moto's ACM over HTTP: inventory, expiry from the bytes, in-use
certificates as dependencies, stand-ins, private keys and restores into another region."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone

import pyrage
import pytest

from dr.exporters.certificates import CertificatesExporter
from dr.exporters.certificates.covering import covers
from dr.exporters.certificates.parsing import leaf
from dr.exporters.certificates.records import expiry_findings
from dr.contract import AWS_CREDENTIALS, ExportContext, OutcomeStatus
from dr.model.artifacts import Sensitivity
from dr.repository import encryption
from dr.repository.reading import ArtifactReader
from tests.certificates.conftest import (acm_client, import_leaf, make_leaf, options, put_in_use)
from tests.exporters.conftest import statuses

NAMES = ["app.example.com", "example.com"]


def codes(findings: list[dict]) -> set[tuple[str, str, str]]:
    return {(f["severity"], f["code"], f["object"]) for f in findings}


@pytest.fixture
def four(acm_endpoint):
    """Fine, expiring in 3 days and expired in us-east-1; fine in us-west-2 (other names).

    ACM (moto too) refuses to import an expired certificate, so the expired one is imported
    seconds before it expires, as any certificate once was, and the fixture waits."""
    leaves = {"gone": make_leaf(["old.example.com"], days_left=2 / 86400), "fine": make_leaf(NAMES, days_left=200),
              "soon": make_leaf(["soon.example.com"], days_left=3), "west": make_leaf(["west.example.com"], days_left=90)}
    arns = {name: import_leaf(acm_endpoint, "us-west-2" if name == "west" else "us-east-1", leaf)
            for name, leaf in leaves.items()}
    wait_until(leaves["gone"].not_after)
    return leaves, arns


def wait_until(moment: datetime) -> None:
    left = (moment - datetime.now(timezone.utc)).total_seconds()
    if left > -0.2:
        time.sleep(left + 0.2)


def test_every_certificate_of_every_region_with_expiry_judged_from_its_bytes(harness, acm_endpoint, four, tmp_path):
    leaves, arns = four
    done = harness.backup(CertificatesExporter, options(acm_endpoint), base_dir=str(tmp_path))
    by_arn = {a.meta["arn"]: a for a in done.artifacts}
    assert set(by_arn) == set(arns.values()) and {a.kind for a in done.artifacts} == {"acm-certificate"}
    record = json.loads(harness_read(harness, by_arn[arns["fine"]]))
    assert record["domains"] == NAMES and record["type"] == "IMPORTED" and record["region"] == "us-east-1"
    assert datetime.fromisoformat(record["not_after"]) == leaves["fine"].not_after
    assert record["exportable"] is False and "never gives" in record["exportable_why"]
    assert record["key_algorithm"] == "RSA_2048" and record["in_use_by"] == []
    assert record["certificate"].encode() == leaves["fine"].certificate
    assert by_arn[arns["west"]].identity == f"us-west-2/{arns['west'].rsplit('/', 1)[1]}"
    # expiring within the margin (14 days): a warning; expired and used by nothing: a warning
    assert codes(done.findings) == {("warning", "acm-certificate-expiring", arns["soon"]),
                                    ("warning", "acm-certificate-expired", arns["gone"])}

    # the source's rto widens the window; an expired certificate that is in use is an error
    put_in_use(acm_endpoint, "us-east-1", arns["gone"], "old-web")
    found = backup_findings(acm_endpoint, tmp_path, rto=timedelta(days=190))
    assert ("error", "acm-certificate-expired", arns["gone"]) in codes(found)
    # 200 days left, inside rto 190 d + margin 14 d: a warning; the 90-day one in us-west-2 too
    assert {("warning", "acm-certificate-expiring", arns[n]) for n in ("fine", "soon", "west")} <= codes(found)
    assert "rto" in next(f["message"] for f in found if f["object"] == arns["fine"])


def harness_read(harness, artifact, identities=None) -> bytes:
    return ArtifactReader(harness.repo, identities).read(artifact)


def backup_findings(endpoint, tmp_path, **context) -> list[dict]:
    """Export into a sink that keeps nothing: only the findings matter here."""
    class Sink:
        source = "src"

        def write(self, kind, identity, content, **kw):
            return None

        def transferred(self, nbytes):
            pass

    ctx = ExportContext("src", CertificatesExporter.Options(**options(endpoint)), str(tmp_path), **context)
    CertificatesExporter(ctx).export(Sink())
    return ctx.findings


def test_dates_that_disagree_with_the_bytes_are_a_finding():
    made = make_leaf(["x.example.com"], days_left=100)
    facts = leaf(made.certificate.decode())
    found = {"arn": "arn:aws:acm:us-east-1:1:certificate/x", "domains": ["x.example.com"], "in_use_by": []}
    said = {"NotAfter": facts.not_after + timedelta(days=365), "NotBefore": facts.not_before}
    (finding,) = expiry_findings(found, facts, said, datetime.now(timezone.utc), timedelta(days=14), "14 d")
    assert finding.code == "acm-certificate-dates-disagree" and "NotAfter" in finding.message
    agree = {"NotAfter": facts.not_after, "NotBefore": facts.not_before}
    assert expiry_findings(found, facts, agree, datetime.now(timezone.utc), timedelta(days=14), "14 d") == []


def test_an_in_use_certificate_depends_on_its_arn_and_a_certificate_elsewhere_stands_in(harness, acm_endpoint,
                                                                                       tmp_path):
    used = import_leaf(acm_endpoint, "us-east-1", make_leaf(NAMES, days_left=200))
    put_in_use(acm_endpoint, "us-east-1", used, "web")
    alone = harness.backup(CertificatesExporter, options(acm_endpoint), base_dir=str(tmp_path))
    (artifact,) = alone.artifacts
    assert [(d.kind, d.reference) for d in artifact.dependencies] == [("acm-certificate", used)]
    assert "web.us-east-1.elb.amazonaws.com" in artifact.dependencies[0].detail
    assert "provides" not in artifact.meta
    # a wildcard certificate in us-west-2 covers both names; one for app.example.com alone does not
    wild = import_leaf(acm_endpoint, "us-west-2", make_leaf(["*.example.com", "example.com"], days_left=90))
    part = import_leaf(acm_endpoint, "us-west-2", make_leaf(["app.example.com"], days_left=90))
    expiring = make_leaf(NAMES, days_left=2 / 86400)
    stale = import_leaf(acm_endpoint, "us-west-2", expiring)
    wait_until(expiring.not_after)
    done = harness.backup(CertificatesExporter, options(acm_endpoint), base_dir=str(tmp_path))
    by_arn = {a.meta["arn"]: a for a in done.artifacts}
    assert by_arn[wild].meta["provides"] == [used]
    assert "provides" not in by_arn[part].meta and "provides" not in by_arn[stale].meta  # too narrow; expired
    assert by_arn[wild].dependencies == []  # used by nothing: nothing to place


def test_wildcards_cover_one_label():
    assert covers(["*.example.com"], "app.example.com")
    assert not covers(["*.example.com"], "a.b.example.com") and not covers(["*.example.com"], "example.com")
    assert covers(["*.example.com"], "*.example.com") and not covers(["app.example.com"], "*.example.com")


# -- private keys, restores ------------------------------------------------------------------------
def keys():
    identity, recipient = encryption.generate_identity()
    return [pyrage.x25519.Identity.from_str(identity)], recipient


def request_private(endpoint: str, name: str) -> str:
    return acm_client(endpoint, "us-east-1").request_certificate(
        DomainName=name, CertificateAuthorityArn="arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/ca1"
    )["CertificateArn"]


def test_a_private_certificate_key_is_secret_and_restores_into_another_region(harness, acm_endpoint, tmp_path):
    private = request_private(acm_endpoint, "internal.example.com")
    identities, recipient = keys()
    opts = options(acm_endpoint, regions=["us-east-1"], export_private=True)
    done = harness.backup(CertificatesExporter, opts, base_dir=str(tmp_path), recipients=[recipient],
                          identities=identities)
    key = next(a for a in done.artifacts if a.kind == "acm-private-key")
    assert key.sensitivity == Sensitivity.SECRET and key.meta["provides"] == [private]
    plain = harness_read(harness, key, identities)
    assert plain.startswith(b"-----BEGIN PRIVATE KEY-----") and plain not in harness.stored_bytes()
    again = harness.backup(CertificatesExporter, opts, base_dir=str(tmp_path), recipients=[recipient],
                           parent=done.artifacts, identities=identities)
    assert again.stats["artifacts_reused"] == 2  # ExportCertificate is not called again

    restore = lambda **kw: harness.restore(CertificatesExporter, opts, done.artifacts, identities=identities,  # noqa: E731
                                           to="us-west-2", **kw)
    item = next(a.identity for a in done.artifacts if a.kind == "acm-certificate")
    assert statuses(restore(dry_run=True)) == {item: OutcomeStatus.PLANNED}
    assert west_certificates(acm_endpoint) == []
    (outcome,) = restore()
    assert outcome.status == OutcomeStatus.RESTORED, outcome.reason
    (arn,) = west_certificates(acm_endpoint)
    back = acm_client(acm_endpoint, "us-west-2").get_certificate(CertificateArn=arn)["Certificate"]
    record = json.loads(harness_read(harness, next(a for a in done.artifacts if a.identity == item)))
    assert back == record["certificate"] and arn in outcome.reason
    assert statuses(restore()) == {item: OutcomeStatus.UNCHANGED}


def west_certificates(endpoint: str) -> list[str]:
    return [c["CertificateArn"] for c in acm_client(endpoint, "us-west-2").list_certificates()["CertificateSummaryList"]]


def test_an_imported_certificate_restores_with_its_key_given_and_amazon_issued_ones_are_skipped(
        harness, acm_endpoint, tmp_path):
    made = make_leaf(NAMES, days_left=200, key_number=1)
    imported = import_leaf(acm_endpoint, "us-east-1", made)
    issued = acm_client(acm_endpoint, "us-east-1").request_certificate(
        DomainName="www.example.com", SubjectAlternativeNames=["api.example.com"], ValidationMethod="DNS")
    opts = options(acm_endpoint, regions=["us-east-1"])
    done = harness.backup(CertificatesExporter, opts, base_dir=str(tmp_path))
    ident = {a.meta["arn"]: a.identity for a in done.artifacts}
    restore = lambda **kw: {o.item: o for o in harness.restore(CertificatesExporter, opts, done.artifacts,  # noqa: E731
                                                                 to="us-west-2", **kw)}
    first = restore()
    assert first[ident[imported]].status == OutcomeStatus.SKIPPED and "--private-key-dir" in first[ident[imported]].reason
    skipped = first[ident[issued["CertificateArn"]]]
    assert skipped.status == OutcomeStatus.SKIPPED
    assert "aws acm request-certificate --region us-west-2 --domain-name www.example.com " \
           "--subject-alternative-names api.example.com" in skipped.reason
    folder = tmp_path / "keys"
    folder.mkdir()
    (folder / f"{imported.rsplit('/', 1)[1]}.pem").write_bytes(make_leaf(["x"], days_left=1, key_number=2).key)
    wrong = restore(remap={"private-key-dir": str(folder)})[ident[imported]]
    assert wrong.status == OutcomeStatus.FAILED and "not this certificate's" in wrong.reason
    (folder / f"{imported.rsplit('/', 1)[1]}.pem").write_bytes(made.key)
    right = restore(remap={"private-key-dir": str(folder)})[ident[imported]]
    assert right.status == OutcomeStatus.RESTORED, right.reason
    (arn,) = west_certificates(acm_endpoint)
    assert acm_client(acm_endpoint, "us-west-2").get_certificate(CertificateArn=arn)["Certificate"].encode() \
        == made.certificate
    # what dr drill compares: the imported one read back; the Amazon-issued one is not restored
    assert compared(harness, opts, done.artifacts, folder) == {ident[imported]: ""}
    # another certificate for the same domains behind that ARN: a conflict until --overwrite
    import_leaf_into(acm_endpoint, arn, make_leaf(NAMES, days_left=150, key_number=1))
    assert "fingerprint certificate sha256" in compared(harness, opts, done.artifacts, folder)[ident[imported]]
    assert restore(remap={"private-key-dir": str(folder)})[ident[imported]].status == OutcomeStatus.CONFLICT
    redone = restore(remap={"private-key-dir": str(folder)}, overwrite=True)[ident[imported]]
    assert redone.status == OutcomeStatus.RESTORED and "re-imported into" in redone.reason
    assert west_certificates(acm_endpoint) == [arn]
    assert compared(harness, opts, done.artifacts, folder) == {ident[imported]: ""}


def compared(harness, opts, artifacts, folder) -> dict:
    """What dr drill finds of each certificate in us-west-2: "" or what differs from the backup."""
    from dr.contract import ExportContext, RestoreRequest
    from dr.drills.comparing import difference
    from dr.repository.reading import ArtifactReader
    reader, by_identity = ArtifactReader(harness.repo), {a.identity: a for a in artifacts}
    exporter = CertificatesExporter(ExportContext("src", CertificatesExporter.Options(**opts), "/"))
    request = RestoreRequest(to="us-west-2", remap={"private-key-dir": str(folder)})
    return {c.item: difference(c, by_identity[c.item], reader)
            for c in exporter.restored_content(artifacts, reader, request)}


def import_leaf_into(endpoint: str, arn: str, made) -> None:
    acm_client(endpoint, "us-west-2").import_certificate(CertificateArn=arn, Certificate=made.certificate,
                                                         CertificateChain=made.chain, PrivateKey=made.key)


def test_an_unreachable_region_is_an_error_finding_and_no_region_fails_the_source(harness, acm_endpoint, tmp_path):
    import_leaf(acm_endpoint, "us-east-1", make_leaf(NAMES, days_left=200))
    found = backup_findings(acm_endpoint, tmp_path)
    assert found == []
    broken = {"regions": ["us-east-1"], "endpoint_url": "http://127.0.0.1:9", "timeout_seconds": 1}
    with pytest.raises(Exception, match="no region could be read"):
        harness.backup(CertificatesExporter, broken, base_dir=str(tmp_path))


def test_run_needs_names_each_region_endpoint_and_the_aws_keys():
    context = ExportContext("c", CertificatesExporter.Options(regions=["us-east-1", "eu-west-1"], export_private=True),
                            "/plan")
    needs = CertificatesExporter(context).run_needs()
    assert needs.endpoints == ["https://acm.us-east-1.amazonaws.com", "https://acm.eu-west-1.amazonaws.com"]
    assert needs.credentials == list(AWS_CREDENTIALS) and "acm:ExportCertificate" in needs.notes[0]
