"""SOPS-encrypted files: which keys can decrypt them, as dependencies a restore needs.

A SOPS file (getsops/sops) keeps its values encrypted with a data key, and the data key
wrapped once per master key in its `sops` metadata: in YAML and JSON a top-level `sops`
mapping, in ENV and INI files flattened keys `sops_<type>__list_<n>__map_<field>`. A restored
file is usable only while one of those master keys can be reached, so each is a dependency
of kind `sops-key`, referenced so a plan can place it:
  kms        (arn)                     https://kms.<region>.amazonaws.com/<key/... or alias/...>
  age        (recipient)               age:<recipient>   (place with a location prefix)
  hc_vault   (vault_address, engine_path, key_name)
                                       <vault_address>/v1/<engine_path>/keys/<key_name>
  gcp_kms    (resource_id)             https://cloudkms.googleapis.com/v1/<resource_id>
  azure_kv   (vault_url, name)         <vault_url>/keys/<name>
  pgp        (fp)                      pgp:<fingerprint>
Any one master key opens the file (one any-of need), unless `key_groups` with a
`shamir_threshold` above 1 split the data key: then several groups are needed, and each key
is judged on its own (strict, never optimistic).

Where it sits: in the files exporter, the one that reads SOPS files; it declares the kind's
finding code (KEY_LOST, Exporter.finding_codes), which the audit lists like its own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from dr.contract import FindingCode

KIND = "sops-key"
#: the audit's blocker when every master key of a SOPS file is lost (Exporter.finding_codes)
KEY_LOST = FindingCode(
    "sops-key-in-failed-domain", "Every key that decrypts a SOPS-encrypted file is lost with the failure",
    "Add a SOPS master key outside the failed domain to the file (sops updatekeys after adding it to "
    ".sops.yaml: a KMS key in a surviving region, an age recipient kept in escrow), then back up and "
    "audit again.")
_FLAT = re.compile(r"^sops_(?P<type>[a-z_]+?)__list_(?P<index>\d+)__map_(?P<field>[a-z_]+)=(?P<value>.*)$", re.M)


@dataclass
class SopsKeys:
    references: list[str] = field(default_factory=list)  # the master keys, as placeable references
    any_one: bool = True  # False: Shamir key groups, several keys needed


def _kms(entry: dict) -> str | None:
    arn = str(entry.get("arn") or "")
    parts = arn.split(":", 5)
    if len(parts) == 6 and parts[2] == "kms":
        return f"https://kms.{parts[3]}.amazonaws.com/{parts[5]}"
    return None


def _vault(entry: dict) -> str | None:
    address, path, key = (str(entry.get(k) or "") for k in ("vault_address", "engine_path", "key_name"))
    return f"{address.rstrip('/')}/v1/{path.strip('/')}/keys/{key}" if address and key else None


_READERS = {
    "kms": _kms,
    "age": lambda e: f"age:{e['recipient']}" if e.get("recipient") else None,
    "hc_vault": _vault,
    "gcp_kms": lambda e: f"https://cloudkms.googleapis.com/v1/{e['resource_id']}" if e.get("resource_id") else None,
    "azure_kv": lambda e: (f"{str(e['vault_url']).rstrip('/')}/keys/{e['name']}"
                           if e.get("vault_url") and e.get("name") else None),
    "pgp": lambda e: f"pgp:{e['fp']}" if e.get("fp") else None,
}


def _from_groups(groups: Any) -> list[str]:
    refs = []
    for group in groups if isinstance(groups, list) else [groups]:
        if not isinstance(group, dict):
            continue
        for key_type, read in _READERS.items():
            for entry in group.get(key_type) or []:
                ref = read(entry) if isinstance(entry, dict) else None
                if ref:
                    refs.append(ref)
    return refs


def _metadata(content: bytes) -> dict | None:
    text = content.decode("utf-8", "replace")
    for load in (json.loads, yaml.safe_load):
        try:
            document = load(text)
        except (ValueError, yaml.YAMLError):
            continue
        if isinstance(document, dict) and isinstance(document.get("sops"), dict):
            return document["sops"]
    flat: dict[str, dict[int, dict]] = {}
    for match in _FLAT.finditer(text):
        entry = flat.setdefault(match["type"], {}).setdefault(int(match["index"]), {})
        entry[match["field"]] = match["value"].strip()
    return {k: list(v.values()) for k, v in flat.items()} or None


def sops_keys(content: bytes) -> SopsKeys | None:
    """The master keys of a SOPS file; None when the content is not a SOPS file."""
    if b"sops" not in content:
        return None
    metadata = _metadata(content)
    if metadata is None:
        return None
    groups = metadata.get("key_groups")
    refs = _from_groups(groups if groups else metadata)
    if not refs:
        return None
    threshold = metadata.get("shamir_threshold")
    split = bool(groups) and isinstance(threshold, int) and threshold > 1
    return SopsKeys(list(dict.fromkeys(refs)), any_one=not split)
