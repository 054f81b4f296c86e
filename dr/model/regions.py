"""Cloud regions named inside references: where a regional service lives.

A reference that names its cloud region belongs to that region, whatever else the plan says
about its host; the plan gives each region domain its cloud region (failure_domains[].region,
or the domain's own name for a domain of kind region), and the placer puts the reference there
(dr.model.locations). Recognised:
  ARNs          arn:<partition>:<service>:<region>:<account>:<resource>; an empty region is a
                global service (IAM, Route53, CloudFront, Organizations): in no region. An ARN
                stands for its service's endpoint host (service_host), so the plan's locations
                and placement rules that name hosts place ARNs too
  AWS hosts     <service>.<region>.amazonaws.com[.cn] and every host with a region label before
                amazonaws.com (<bucket>.s3.<region>..., <acct>.dkr.ecr.<region>...,
                <id>.<service>.<region>.vpce...), the legacy s3-<region>.amazonaws.com
  GCP hosts     <region>-<service>.googleapis.com (<region>-aiplatform, <region>-docker.pkg.dev),
                and resource names projects/P/locations/<region>/... (`global` is no region)
  Azure hosts   <name>.<region>.azmk8s.io (AKS API servers); *.vault.azure.net and *.blob.core.windows.net name no region (the vault or
                account is in one, but its name does not say which): placed by the plan only
  zone names   a cloud zone (eu-central-1a, europe-west4-b, westeurope-1) is in its region
                (zone_region): a reference naming a zone the plan has no domain for is placed
                in the zone's region
  aws:<service>:<region>
                what the kubernetes scan recorded for an External Secrets store before it wrote
                the endpoint host (aws:SecretsManager:eu-central-1)
"""

from __future__ import annotations

import re
from functools import lru_cache

_AWS_REGION = re.compile(r"^(?:us-gov|us-iso[a-z]?|[a-z]{2})-[a-z]+-\d{1,2}$")
_GCP_REGION = re.compile(r"^[a-z]+-[a-z]+\d{1,2}$")
_AZURE_REGION = re.compile(r"^[a-z]+(?:[a-z]|\d)*$")
_ARN = re.compile(r"^arn:(aws[\w-]*):([\w-]+):([\w-]*):(\d*|aws):(.+)$")
_GCP_LOCATION = re.compile(r"(?:^|/)projects/[^/]+/locations/([a-z0-9-]+)(?:/|$)")
# External Secrets' AWS services, by the endpoint host prefix each one calls.
AWS_SERVICE_HOSTS = {"secretsmanager": "secretsmanager", "parameterstore": "ssm"}


def aws_domain(partition: str) -> str:
    return "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"


def service_host(service: str, region: str, partition: str = "aws") -> str:
    """The endpoint host of an AWS service: regional, or global when region is ''."""
    prefix = AWS_SERVICE_HOSTS.get(service.lower(), service.lower())
    return ".".join(p for p in (prefix, region.lower(), aws_domain(partition)) if p)


@lru_cache(maxsize=1 << 14)
def arn_host(reference: str) -> str | None:
    """The endpoint host an ARN stands for (arn:aws:kms:eu-west-1:1:key/x -> kms.eu-west-1.amazonaws.com)."""
    match = _ARN.match(reference.strip())
    return service_host(match.group(2), match.group(3), match.group(1)) if match else None


def service_reference_host(reference: str) -> str | None:
    """The endpoint host an ARN or an aws:<service>:<region> reference stands for, else None."""
    ref = reference.strip()
    if ref.startswith("arn:"):
        return arn_host(ref)
    parts = ref.split(":")
    if len(parts) == 3 and parts[0] == "aws" and _AWS_REGION.match(parts[2]):
        return service_host(parts[1], parts[2])
    return None


def region_of(reference: str, host: str) -> str | None:
    """The cloud region a reference (whose host is `host`, dr.model.locations.host_of) names,
    or None: a global service, or no region named."""
    if "/locations/" in reference:
        located = _GCP_LOCATION.search(reference)
        if located:
            return located.group(1) if _GCP_REGION.match(located.group(1)) else None
    return host_region(host)


@lru_cache(maxsize=1 << 14)
def host_region(host: str) -> str | None:
    labels = host.lower().split(".")
    if host.endswith((".amazonaws.com", ".amazonaws.com.cn")):
        return next((r for r in (_legacy_s3(label) or label for label in labels) if _AWS_REGION.match(r)), None)
    if host.endswith((".googleapis.com", ".pkg.dev")):
        return _gcp_region(labels)
    if host.endswith(".azmk8s.io") and len(labels) >= 4:
        return labels[-3] if _AZURE_REGION.match(labels[-3]) else None
    return None


def _gcp_region(labels: list[str]) -> str | None:
    """<region>-<service>.googleapis.com, or <service>.<region>.rep.googleapis.com."""
    if len(labels) >= 5 and labels[-3] == "rep" and _GCP_REGION.match(labels[-4]):
        return labels[-4]
    first = labels[0].rsplit("-", 1)[0] if "-" in labels[0] else ""
    return first if _GCP_REGION.match(first) else None


def _legacy_s3(label: str) -> str:
    """s3-eu-west-1 (the old dash form of S3's regional host) -> eu-west-1."""
    return label[3:] if label.startswith("s3-") else ""


_AWS_ZONE = re.compile(r"^((?:us-gov|us-iso[a-z]?|[a-z]{2})-[a-z]+-\d{1,2})[a-z]$")
_GCP_ZONE = re.compile(r"^([a-z]+-[a-z]+\d{1,2})-[a-z]$")
_AZURE_ZONE = re.compile(r"^([a-z]{4,}\d?)-[1-3]$")  # Azure has zones 1 to 3


def zone_region(name: str) -> str | None:
    """The cloud region of a zone name: eu-central-1a (AWS) -> eu-central-1, europe-west4-b (GCP)
    -> europe-west4, westeurope-1 (Azure, as topology.kubernetes.io/zone writes it) -> westeurope;
    None for anything else (an AWS zone ID such as use1-az1 names no region)."""
    for pattern in (_AWS_ZONE, _GCP_ZONE, _AZURE_ZONE):
        match = pattern.match(name.lower())
        if match:
            return match.group(1)
    return None


def region_host_patterns(region: str) -> list[str]:
    """Host globs that name this region: the scanner records a bare host matching one."""
    return [f"*.{region}.amazonaws.com", f"*.{region}.amazonaws.com.cn", f"{region}-*.googleapis.com",
            f"{region}-*.pkg.dev", f"*.{region}.azmk8s.io"]
