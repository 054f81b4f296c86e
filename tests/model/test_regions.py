"""Cloud regions read from references, and the placer putting them in the plan's region domain (issue 25)."""

from __future__ import annotations

import pytest

from dr.model.locations import Location, Placer, PlacementRule, host_of
from dr.model.regions import host_region, region_of, zone_region

REGIONS = {"eu-central-1": "frankfurt", "us-east-1": "us-east-1", "europe-west4": "gcp-nl", "westeurope": "azure-nl"}


@pytest.mark.parametrize("reference, host, region", [
    ("arn:aws:secretsmanager:eu-central-1:123456789012:secret:db-AbCdEf",
     "secretsmanager.eu-central-1.amazonaws.com", "eu-central-1"),
    ("arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab", "kms.us-east-1.amazonaws.com",
     "us-east-1"),
    ("arn:aws-cn:s3:cn-north-1:123456789012:accesspoint/x", "s3.cn-north-1.amazonaws.com.cn", "cn-north-1"),
    ("arn:aws:iam::123456789012:role/eso-reader", "iam.amazonaws.com", None),
    ("arn:aws:iam::aws:policy/ReadOnlyAccess", "iam.amazonaws.com", None),
    ("arn:aws:route53:::hostedzone/Z0123456789", "route53.amazonaws.com", None),
    ("arn:aws:cloudfront::123456789012:distribution/E1", "cloudfront.amazonaws.com", None),
    ("aws:SecretsManager:eu-central-1", "secretsmanager.eu-central-1.amazonaws.com", "eu-central-1"),
    ("aws:ParameterStore:eu-central-1", "ssm.eu-central-1.amazonaws.com", "eu-central-1"),
    ("https://secretsmanager.eu-central-1.amazonaws.com", "secretsmanager.eu-central-1.amazonaws.com",
     "eu-central-1"),
    ("s3.eu-west-1.amazonaws.com", "s3.eu-west-1.amazonaws.com", "eu-west-1"),
    ("https://ckpt.s3.eu-west-1.amazonaws.com/run/step-1", "ckpt.s3.eu-west-1.amazonaws.com", "eu-west-1"),
    ("https://s3-eu-west-1.amazonaws.com/ckpt", "s3-eu-west-1.amazonaws.com", "eu-west-1"),
    ("123456789012.dkr.ecr.us-east-1.amazonaws.com/team/serve:v2", "123456789012.dkr.ecr.us-east-1.amazonaws.com",
     "us-east-1"),
    ("https://vpce-0a1b.secretsmanager.eu-central-1.vpce.amazonaws.com", None, "eu-central-1"),
    ("https://s3.amazonaws.com/legacy", "s3.amazonaws.com", None),
    ("https://sts.amazonaws.com", "sts.amazonaws.com", None),
    ("https://europe-west4-aiplatform.googleapis.com/v1/x", "europe-west4-aiplatform.googleapis.com", "europe-west4"),
    ("europe-west4-docker.pkg.dev/proj/repo/img:1", "europe-west4-docker.pkg.dev", "europe-west4"),
    ("https://secretmanager.europe-west4.rep.googleapis.com", None, "europe-west4"),
    ("https://aiplatform.googleapis.com/v1/x", "aiplatform.googleapis.com", None),
    ("projects/ml/locations/europe-west4/endpoints/42", None, "europe-west4"),
    ("projects/ml/locations/global/keyRings/k", None, None),
    ("https://myaks-dns-1a2b.hcp.westeurope.azmk8s.io:443", "myaks-dns-1a2b.hcp.westeurope.azmk8s.io", "westeurope"),
    ("https://dr-keys.vault.azure.net", "dr-keys.vault.azure.net", None),
    ("https://acct.blob.core.windows.net/c", "acct.blob.core.windows.net", None),
    ("https://git.example.com/platform.git", "git.example.com", None),
])
def test_region_and_host_of_a_reference(reference, host, region):
    if host is not None:
        assert host_of(reference) == host
    assert region_of(reference, host_of(reference)) == region


def test_a_reference_naming_a_region_is_placed_in_that_regions_domain():
    placer = Placer(regions=REGIONS)
    placed = placer.place("arn:aws:secretsmanager:eu-central-1:123456789012:secret:db")
    assert (placed.domain, placed.rule, placed.location) == ("frankfurt", "region eu-central-1", None)
    assert placer.place("https://europe-west4-aiplatform.googleapis.com").domain == "gcp-nl"
    assert placer.place("x.hcp.westeurope.azmk8s.io").domain == "azure-nl"
    # a region the plan does not have, and a global service: not placed by region
    assert placer.place("arn:aws:kms:ap-south-1:1:key/k").domain is None
    assert placer.place("arn:aws:iam::123456789012:role/x").domain is None


def test_locations_come_first_then_the_region_then_rules():
    placer = Placer([Location("sm-replica", "vault-account", prefixes=["arn:aws:secretsmanager:eu-central-1:9:"])],
                    [PlacementRule("*.amazonaws.com", "aws"), PlacementRule("iam.amazonaws.com", "aws")], REGIONS)
    assert placer.place("arn:aws:secretsmanager:eu-central-1:9:secret:x").domain == "vault-account"
    assert placer.place("arn:aws:secretsmanager:eu-central-1:1:secret:x").domain == "frankfurt"
    # a global service is placed by the rule that names its host, in no region
    assert (placer.place("arn:aws:iam::1:role/x").domain, placer.place("arn:aws:iam::1:role/x").rule) == \
        ("aws", "*.amazonaws.com")


def test_the_scanner_is_told_the_hosts_of_every_region_the_plan_has():
    patterns = Placer(regions={"eu-central-1": "frankfurt"}).host_patterns()
    assert "*.eu-central-1.amazonaws.com" in patterns and "eu-central-1-*.googleapis.com" in patterns


def test_host_region_ignores_labels_that_only_look_like_regions():
    assert host_region("eu-central-1.example.com") is None  # not an AWS host
    assert host_region("us-central1.example.com") is None


@pytest.mark.parametrize("zone, region", [
    ("eu-central-1a", "eu-central-1"), ("us-gov-west-1b", "us-gov-west-1"), ("europe-west4-b", "europe-west4"),
    ("westeurope-1", "westeurope"), ("use1-az1", None), ("eu-central-1", None), ("rack-7", None),
])
def test_a_zone_name_is_in_its_region(zone, region):
    assert zone_region(zone) == region


def test_a_volume_in_a_zone_is_placed_in_the_zones_domain_else_its_regions():
    """`volume://<zone>/...` (the kubernetes exporter's claims on zonal disks): the zone's domain when
    the plan has one (by its `zone`, default its name), else the region's; a region's own name too."""
    placer = Placer(regions=REGIONS, zones={"eu-central-1a": "fra-a", "europe-west4-b": "nl-b"})
    placed = placer.place("volume://eu-central-1a/ml/data")
    assert (placed.domain, placed.rule) == ("fra-a", "zone eu-central-1a")
    assert placer.place("volume://eu-central-1b/ml/data").domain == "frankfurt"  # no zone domain: the region
    assert placer.place("volume://europe-west4-b/ml/data").domain == "nl-b"
    assert placer.place("volume://eu-central-1/ml/files").domain == "frankfurt"  # a regional file system
    assert placer.place("volume://ap-south-1a/ml/data").domain is None  # a region the plan does not have
    assert placer.place("volume:///ml/data").domain is None
    # a location still comes first
    first = Placer([Location("array", "dc", prefixes=["volume://eu-central-1a/"])], regions=REGIONS,
                   zones={"eu-central-1a": "fra-a"})
    assert first.place("volume://eu-central-1a/ml/data").domain == "dc"
