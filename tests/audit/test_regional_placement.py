"""The audit places a regional cloud service in its region's domain, a global one in none (issue 25).

The dependencies are what the kubernetes scanner records for unmodified-looking objects: an
External Secrets ClusterSecretStore reading AWS Secrets Manager in eu-central-1, a StorageClass
whose EBS volumes are encrypted with a KMS key of that region, a Crossplane RDS instance there,
and an IAM role and a Route53 hosted zone (global services).
"""

from __future__ import annotations

import pytest

from dr.exporters.kubernetes.scanning import Scanner
from dr.model.plan_loading import PlanError, load_plan
from tests.audit import worlds
from tests.audit.conftest import flagged

ROLE = "arn:aws:iam::123456789012:role/eso-reader"
ZONE = "arn:aws:route53:::hostedzone/Z0123456789ABC"
KMS = "arn:aws:kms:eu-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
STORE = {"apiVersion": "external-secrets.io/v1", "kind": "ClusterSecretStore", "metadata": {"name": "aws-sm"},
         "spec": {"provider": {"aws": {"service": "SecretsManager", "region": "eu-central-1", "role": ROLE,
                                       "auth": {"jwt": {"serviceAccountRef": {"name": "eso", "namespace": "eso"}}}}}}}
STORAGE_CLASS = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "gp3-enc"},
                 "provisioner": "ebs.csi.aws.com", "parameters": {"type": "gp3", "encrypted": "true", "kmsKeyId": KMS}}
RDS = {"apiVersion": "rds.aws.upbound.io/v1beta1", "kind": "Instance", "metadata": {"name": "mlflow-db"},
       "spec": {"forProvider": {"region": "eu-central-1", "engine": "postgres"}}}
DNS = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dns", "namespace": "infra"},
       "data": {"zone": ZONE}}


def _scanned(obj: dict) -> list:
    return Scanner().scan(obj)[0]


def _contents() -> dict:
    contents = dict(worlds.CLEAN)
    contents["platform-k8s"] = contents["platform-k8s"] + [
        ("clustersecretstores.external-secrets.io", "aws-sm", _scanned(STORE)),
        ("storageclasses.storage.k8s.io", "gp3-enc", _scanned(STORAGE_CLASS)),
        ("instances.rds.aws.upbound.io", "mlflow-db", _scanned(RDS)),
        ("configmaps", "infra/dns", _scanned(DNS))]
    return contents


def _domains(frankfurt: dict) -> list:
    """The world's domains, with one more region in the prod account."""
    domains = worlds.plan_data("")["failure_domains"]
    domains[0]["children"][0]["children"].append(frankfurt)
    return domains


def _plan(world, frankfurt: dict, **changes):
    return world.plan(failure_domains=_domains(frankfurt), sources=worlds.CLEAN_SOURCES,
                      protects_against=[frankfurt["name"]], **changes)


def test_the_scanner_records_the_regional_endpoint_and_every_arn():
    refs = {(d.kind, d.reference) for d in _scanned(STORE) + _scanned(STORAGE_CLASS) + _scanned(RDS)}
    assert refs == {("secret-store", "https://secretsmanager.eu-central-1.amazonaws.com"),
                    ("cloud-resource", ROLE), ("kms", KMS), ("cloud-resource", "aws:rds:eu-central-1")}


@pytest.mark.parametrize("frankfurt", [{"name": "eu-central-1", "kind": "region"},
                                       {"name": "frankfurt", "kind": "region", "region": "eu-central-1"}])
def test_a_secrets_manager_store_of_a_failed_region_is_a_blocker_and_global_services_are_not(world, frankfurt):
    world.backup(_contents())
    report = world.audit(_plan(world, frankfurt))
    lost = frankfurt["name"]
    found = flagged(report, lost)
    assert ("secret-store-in-failed-domain", "https://secretsmanager.eu-central-1.amazonaws.com") in found
    assert ("secret-store-in-failed-domain", KMS) in found  # a KMS key is judged as the secret stores are
    assert ("dependency-in-failed-domain", "aws:rds:eu-central-1") in found
    assert report.blocked
    # IAM and Route53 are in no region: not lost with eu-central-1; nothing places them, so unknown
    assert {(f.code, f.severity) for f in report.findings if f.reference in (ROLE, ZONE)} == \
        {("unknown-location", "warning")}
    message = next(f.message for f in report.findings if f.reference == KMS)
    assert "region eu-central-1" in message


def test_a_rule_places_global_services_and_a_surviving_region_is_not_lost(world):
    world.backup(_contents())
    rules = [{"match": "iam.amazonaws.com", "domain": "aws", "reason": "global"},
             {"match": "route53.amazonaws.com", "domain": "aws", "reason": "global"}]
    report = world.audit(_plan(world, {"name": "eu-central-1", "kind": "region"}, placement_rules=rules),
                         failed=["eu-west-1"])
    assert not report.blocked
    assert not [f for f in report.findings if f.reference in (ROLE, ZONE, KMS)]


def test_a_region_field_is_only_for_region_domains_and_names_each_cloud_region_once(world):
    with pytest.raises(PlanError) as refused:
        domains = _domains({"name": "ireland", "kind": "region", "region": "eu-west-1"})
        domains[0]["region"] = "eu-west-1"
        load_plan(world.plan_path(failure_domains=domains))
    text = str(refused.value)
    assert "region 'eu-west-1' on a domain of kind provider" in text
    assert "cloud region 'eu-west-1' also the region of domain eu-west-1" in text


def test_a_zone_field_is_only_for_zone_domains_and_names_each_cloud_zone_once(world):
    domains = _domains({"name": "frankfurt", "kind": "region", "region": "eu-central-1", "children": [
        {"name": "fra-a", "kind": "zone", "zone": "eu-central-1a"},
        {"name": "fra-a2", "kind": "zone", "zone": "eu-central-1a"}]})
    domains[0]["zone"] = "eu-central-1b"
    with pytest.raises(PlanError) as refused:
        load_plan(world.plan_path(failure_domains=domains))
    text = str(refused.value)
    assert "zone 'eu-central-1b' on a domain of kind provider" in text, text
    assert "cloud zone 'eu-central-1a' also the zone of domain fra-a" in text, text
