"""Where a secret can be read after a failure: its regions and the KMS keys that decrypt it.

A secret lives in its primary region and in each replica region (ReplicationStatus); in each,
a KMS key of that region decrypts it (KmsKeyId; a replica has its own). So a secret survives a
regional failure when any one region's copy survives, and that copy is readable only while
its key does. The metadata record's dependencies say so, one per region:
  secretsmanager-secret     https://secretsmanager.<region>.amazonaws.com/<sealed name>
  secretsmanager-kms-key    https://kms.<region>.amazonaws.com/<key id, or a chosen alias sealed>
(<sealed name>: the name's keyed digest, format.md 8.1: the record is a secret artifact; a key
chosen by alias is sealed the same way, dr.repository.key_names, since a per-secret key's alias
often repeats the secret's name. The plaintext names go into the record's sealed meta
`sealed_names`, for `dr audit --identity`.)
Regional endpoints, so a plan's rule for *.<region>.amazonaws.com places each in its region
(a key kept in another account can be placed by a location with its prefix). The exporter's
restore_needs (contract v2) makes the copies one any-of need and the keys another: losing the
primary region is no blocker while a replica (and its key) survives; with no replica outside
the failed region, the audit reports `secret-in-failed-region`, unless the snapshot holds the
value (include_values: the value artifact provides these references, so the audit counts the
snapshot's copy and the restore puts the value back in a surviving region).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable

from dr.contract import AnyOf, FindingCode
from dr.repository.key_names import kms_key
from dr.exporters.secretsmanager.listing import region_of
from dr.model.artifacts import Artifact, Dependency

SECRET, KEY = "secretsmanager-secret", "secretsmanager-kms-key"
#: the audit's finding when no region's copy, or key, survives (Exporter.finding_codes)
SECRET_LOST = FindingCode(
    "secret-in-failed-region", "A cloud secret, or the KMS key that decrypts it, exists only where the failure is",
    "Replicate the secret to a surviving region (aws secretsmanager replicate-secret-to-regions, with a "
    "KMS key of that region), or back up its value (secretsmanager source, include_values: true), then "
    "back up and audit again.")
LOST_KIND_CODES = MappingProxyType({SECRET: SECRET_LOST.code, KEY: SECRET_LOST.code})


def secret_reference(region: str, name: str) -> str:
    return f"https://secretsmanager.{region}.amazonaws.com/{name}"


def key_reference(region: str, key: str, seal: Callable[[str], str] = lambda k: k,
                  sealed: list[str] | None = None) -> str:
    """A key named by ARN lives in the ARN's region; by id or alias, in the secret's region. A
    chosen alias is sealed (`seal`; the plaintext noted in `sealed`)."""
    if key.startswith("arn:"):
        region = region_of(key) or region
        key = key.split(":", 5)[5] if key.count(":") >= 5 else key
    return f"https://kms.{region}.amazonaws.com/{kms_key(key, seal, sealed)}"


def copies(record: dict[str, Any], default_key: str) -> list[tuple[str, str]]:
    """(region, KMS key) of the primary and of each replica, the primary first."""
    found = [(region_of(record["ARN"]), record.get("KmsKeyId") or default_key)]
    found += [(r["Region"], r.get("KmsKeyId") or default_key) for r in record.get("ReplicationStatus") or []
              if r.get("Region")]
    return found


def dependencies(record: dict[str, Any], default_key: str, seal: Callable[[str], str],
                 sealed: list[str] | None = None) -> list[Dependency]:
    """The secret's name and its keys' chosen aliases are sealed in them (format.md 8.1): `seal`
    gives their keyed digests, so the references keep their regional host (the audit places them)
    and name no secret. `sealed` collects the plaintext names, for the sealed meta."""
    name, deps = seal(record["Name"]), []
    if sealed is not None:
        sealed.append(record["Name"])
    for index, (region, key) in enumerate(copies(record, default_key)):
        role = "primary" if index == 0 else "replica"
        deps.append(Dependency(SECRET, secret_reference(region, name), f"the {role} copy of this secret"))
        deps.append(Dependency(KEY, key_reference(region, key, seal, sealed), f"the KMS key that decrypts the {role} copy "
                               f"of this secret in {region}"))
    return deps


def provided(record: dict[str, Any], default_key: str, seal: Callable[[str], str]) -> list[str]:
    """What a value artifact brings back: the secret, by ARN and in each region (by its name, as
    other artifacts name it, and by its sealed name, as the metadata record's dependencies do),
    and what its keys protect (the snapshot holds the value, encrypted to the plan's recipients:
    a restore into a surviving region needs neither the lost copy nor its key)."""
    refs = [record["ARN"]]
    for region, key in copies(record, default_key):
        refs += [secret_reference(region, record["Name"]), secret_reference(region, seal(record["Name"])),
                 key_reference(region, key), key_reference(region, key, seal)]
    return list(dict.fromkeys(refs))


def any_region_needs(artifacts: list[Artifact], kind: str) -> list[AnyOf]:
    """Per metadata record: any region's copy of the secret, and any region's key."""
    needs = []
    for artifact in artifacts:
        if artifact.kind != kind:
            continue
        for dep_kind, what in ((SECRET, "copy (any region) of secret"), (KEY, "KMS key (any region) decrypting")):
            refs = tuple(dict.fromkeys(d.reference for d in artifact.dependencies if d.kind == dep_kind))
            if refs:
                needs.append(AnyOf(dep_kind, f"{what} {artifact.identity}", refs))
    return needs
