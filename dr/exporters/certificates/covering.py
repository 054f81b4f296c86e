"""Which certificate can stand in for which: the rule behind `provides`.

A certificate that is in use (InUseBy is not empty) is a dependency of kind `acm-certificate`
on its own ARN, placed by the plan (a location with the prefix `arn:aws:acm:<region>:` puts it
in that region's failure domain). When that region is lost, the audit counts the dependency as
covered when some artifact of the snapshot provides the ARN. Two kinds of artifact do:

  * a certificate of another region that the source also backs up, ISSUED and not expired
    (judged from its bytes), whose names cover every domain of the one in use (the same name,
    or a wildcard `*.example.com` for `app.example.com`): the load balancers or ingresses
    rebuilt in that region can use it;
  * the certificate's own private key in the snapshot (`export_private`): a restore imports
    the certificate into any region.

Neither kind is an expired or pending certificate, nor one in the same region (lost with it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable


def covers(names: Iterable[str], wanted: str) -> bool:
    """Whether a certificate for `names` serves `wanted` (a wildcard covers one label)."""
    names = set(names)
    if wanted in names:
        return True
    if wanted.startswith("*.") or "." not in wanted:
        return False
    return "*." + wanted.split(".", 1)[1] in names


def usable(found: dict[str, Any], now: datetime) -> bool:
    """ISSUED, and valid now by its own bytes."""
    not_after = found.get("not_after")
    return found.get("status") == "ISSUED" and bool(not_after) and datetime.fromisoformat(not_after) > now


def stand_ins(records: list[dict[str, Any]], now: datetime) -> dict[str, list[str]]:
    """ARN -> the ARNs of in-use certificates of other regions it can stand in for."""
    provides: dict[str, list[str]] = {}
    in_use = [r for r in records if r["in_use_by"] and r["domains"]]
    for candidate in records:
        if not usable(candidate, now):
            continue
        names = candidate.get("names") or candidate["domains"]
        for used in in_use:
            wanted = used.get("names") or used["domains"]
            if used["region"] != candidate["region"] and all(covers(names, d) for d in wanted):
                provides.setdefault(candidate["arn"], []).append(used["arn"])
    return provides
