"""How the Vault unseals, as the dependencies of its snapshot: the audit places each one.

A raft snapshot is useless without what unseals the cluster it restores: its storage is
encrypted with a keyring that only the unseal mechanism opens. So the snapshot depends on it,
and the audit judges that dependency like any other, by where the plan places its reference:

  shamir    one `unseal-custodian` per key-share holder, `custodian:<name>`: place custodians
            with locations (prefix `custodian:<name>`) or leave them unknown, which the audit
            reports. Any `threshold` of them suffice, yet each one is listed: losing one
            custodian with a region is worth a finding.
  awskms    `unseal-kms`, the key's regional endpoint: https://kms.<region>.amazonaws.com/<key>
            (a chosen alias as its keyed digest, dr.repository.key_names: the snapshot is
            a secret artifact, format.md 8.1; the key's id and its host stay plaintext),
            so a rule for *.<region>.amazonaws.com places it in its region. A multi-region
            key (dr.exporters.vault.kms reads its replicas at backup time) gives one per
            region, and the exporter's restore_needs makes them one any-of need: the
            restored Vault unseals with whichever replica survives.
  transit   `unseal-transit`, the transit key's URL on the other Vault:
            <address>/v1/<mount>/keys/<key> (the key's name sealed as above); a transit Vault in
            the failed cluster is a blocker.
The names sealed are listed in `sealed`, which the exporter keeps in the snapshot's sealed meta.

These kinds have their own finding code, unseal-key-in-failed-domain, and runbook.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Callable

from dr.contract import AnyOf, FindingCode
from dr.repository.key_names import chosen_name, kms_key
from dr.exporters.vault.kms import KeyRegions
from dr.exporters.vault.options import AwsKmsUnseal, ShamirUnseal, TransitUnseal, VaultOptions
from dr.model.artifacts import Artifact, Dependency

CUSTODIAN, KMS, TRANSIT = "unseal-custodian", "unseal-kms", "unseal-transit"
KINDS = frozenset({CUSTODIAN, KMS, TRANSIT})
#: the audit's finding for a lost unseal (Exporter.finding_codes), and its kinds' code
UNSEAL_LOST = FindingCode(
    "unseal-key-in-failed-domain", "What unseals a backed-up Vault is lost with the failure",
    "Keep the unseal outside the failed domain: a multi-region KMS key with a replica in a surviving "
    "region, a transit Vault outside the failed cluster, or Shamir custodians outside it; then change "
    "the vault source's unseal option and back up again.")
LOST_KIND_CODES = MappingProxyType({kind: UNSEAL_LOST.code for kind in sorted(KINDS)})


def unseal_dependencies(options: VaultOptions, regions: KeyRegions | None = None,
                        seal: Callable[[str], str] = lambda name: name,
                        sealed: list[str] | None = None) -> list[Dependency]:
    """What unseals the snapshot; regions: an awskms key's regions as read at backup time; seal:
    the keyed digest of a chosen key name (ExportContext.seal_name), noted in `sealed`."""
    unseal = options.unseal
    if isinstance(unseal, ShamirUnseal):
        total = len(unseal.custodians)
        return [Dependency(CUSTODIAN, f"custodian:{name}",
                           f"holds one of {total} Shamir unseal key shares ({unseal.threshold} unseal)")
                for name in unseal.custodians]
    if isinstance(unseal, AwsKmsUnseal):
        key = kms_key(unseal.key_id, seal, sealed)
        primary = Dependency(KMS, f"https://kms.{unseal.region}.amazonaws.com/{key}",
                             "the AWS KMS key of seal \"awskms\": the restored cluster unseals only with it")
        if regions is None or not regions.replicas:
            return [primary]
        primary = Dependency(KMS, primary.reference, f"the multi-region AWS KMS key of seal \"awskms\" in "
                             f"{unseal.region}; a replica in {', '.join(regions.replicas)} unseals as well")
        return [primary] + [Dependency(KMS, f"https://kms.{region}.amazonaws.com/{regions.key_id}",
                                       f"replica of multi-region key {regions.key_id} in {region}: a restored "
                                       f"Vault whose seal names it unseals")
                            for region in regions.replicas]
    if isinstance(unseal, TransitUnseal):
        return [Dependency(TRANSIT, f"{unseal.address.rstrip('/')}/v1/{unseal.mount_path.strip('/')}/keys/"
                                    f"{chosen_name(unseal.key_name, seal, sealed)}",
                           "the transit key of seal \"transit\" on another Vault: the restored cluster "
                           "unseals only through it")]
    raise AssertionError(f"unknown unseal {unseal!r}")


def any_region_needs(artifacts: list[Artifact], address: str) -> list[AnyOf]:
    """A multi-region unseal key: any one of its regions unseals (contract v2 restore_needs)."""
    needs = []
    for artifact in artifacts:
        keys = tuple(dict.fromkeys(d.reference for d in artifact.dependencies if d.kind == KMS))
        if keys:  # one region or several: the kind is judged only through these needs
            needs.append(AnyOf(KMS, f"KMS key (any replica region) that unseals {address}", keys))
    return needs


def describe(options: VaultOptions) -> str:
    unseal = options.unseal
    if isinstance(unseal, ShamirUnseal):
        return f"shamir: {unseal.threshold} of {len(unseal.custodians)} custodians"
    if isinstance(unseal, AwsKmsUnseal):
        return f"awskms: {unseal.key_id} in {unseal.region}"
    return f"transit: key {unseal.key_name} on {unseal.address}"
