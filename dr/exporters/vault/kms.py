"""The regions an awskms unseal key lives in: a multi-region key's primary and its replicas.

A Vault whose seal is `awskms` unseals with the key in the region its seal stanza names. A
multi-region key (id `mrk-...`) has the same key material and id in every replica region, so a
restored Vault whose seal names a surviving replica unseals too: any one region suffices.
DescribeKey's MultiRegionConfiguration lists the primary and the replicas; the backup reads it
once per run (one request) and records one `unseal-kms` dependency per region, which the
exporter's restore_needs declares as one any-of need. A single-region key stays one dependency:
losing its region is a blocker.

Reading the key is best effort: when it fails (no credentials, no permission, no network) the
backup records the configured region only, which the audit judges strictly, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dr.exporters.vault.options import AwsKmsUnseal


@dataclass
class KeyRegions:
    key_id: str  # the key's id as KMS names it (mrk-... for a multi-region key)
    regions: list[str]  # the configured region first, then the others
    multi_region: bool = False
    problem: str = ""  # why the key could not be read (regions is then the configured one)
    replicas: list[str] = field(default_factory=list)


def key_regions(unseal: AwsKmsUnseal, timeout: float) -> KeyRegions:
    # imported here: boto3 takes a noticeable part of a second to import, and only awskms needs it
    import boto3
    import botocore.config
    import botocore.exceptions

    config = botocore.config.Config(connect_timeout=timeout, read_timeout=timeout,
                                    retries={"max_attempts": 2, "mode": "standard"})
    try:
        kms = boto3.session.Session().client("kms", region_name=unseal.region, endpoint_url=unseal.endpoint_url,
                                             config=config)
        metadata = kms.describe_key(KeyId=unseal.key_id)["KeyMetadata"]
    except botocore.exceptions.ClientError as exc:
        error = exc.response.get("Error", {})
        return KeyRegions(unseal.key_id, [unseal.region],
                          problem=f"{error.get('Code', 'ClientError')}: {error.get('Message', '')}".strip())
    except botocore.exceptions.BotoCoreError as exc:
        return KeyRegions(unseal.key_id, [unseal.region], problem=f"{type(exc).__name__}: {exc}")
    config_ = metadata.get("MultiRegionConfiguration") or {}
    found = [config_.get("PrimaryKey", {}).get("Region")] + [r.get("Region") for r in config_.get("ReplicaKeys", [])]
    others = [r for r in dict.fromkeys(found) if r and r != unseal.region]
    multi = bool(metadata.get("MultiRegion"))
    return KeyRegions(metadata.get("KeyId", unseal.key_id), [unseal.region] + (others if multi else []), multi,
                      replicas=others if multi else [])
