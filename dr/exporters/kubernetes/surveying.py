"""What the destination already holds of a type, listed once before its objects are restored.

A restore into a cluster that holds some of the objects already (the recovery cluster's
namespaces and default ServiceAccounts; every object, when a restore runs again after a partial
one) spent two requests on each of them: a create answered AlreadyExists, then a read to compare.
One paginated list of the type answers for all of them at once. Each listed object is kept as a
fingerprint of its comparison form (cleaning.normalized, the form a restore compares in), so:
- listed with the backup's fingerprint: UNCHANGED, no request;
- listed otherwise: read and compared as before (the paths that differ, or --overwrite's PUT
  carrying the live resourceVersion);
- not listed: created (an AlreadyExists then, from an object made since, is compared as before).
What is judged is the destination as listed when its type's restore began, as a read just
before a create would judge it a moment earlier. An object being deleted (deletionTimestamp) is
not kept: it goes the per-object way.

Bounded: a list past `max(4 x the objects to restore, 1,000)` objects is dropped (restoring ten
ConfigMaps into a cluster holding 100,000 would list them all for nothing) and the type goes
object by object, as it does when the list is refused (403) or fails.
"""

from __future__ import annotations

import hashlib
import json

from dr.exporters.kubernetes.cleaning import normalized
from dr.exporters.kubernetes.requesting import Api, KubeError
from dr.exporters.kubernetes.resources import ResourceType

PAGE = 500
FLOOR = 1000  # a survey may always read this many objects
TIMEOUT = 60.0

Key = tuple[str | None, str]  # (namespace, name)


def fingerprint(rtype: ResourceType, obj: dict) -> bytes:
    """The comparison form's digest (what `normalized` keeps, in a canonical JSON)."""
    form = json.dumps(normalized(rtype, obj), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(form.encode()).digest()


def survey(api: Api, rtype: ResourceType, expected: int) -> tuple[dict[Key, bytes] | None, str]:
    """({(namespace, name): fingerprint} of the type's live objects, "") or (None, why not)."""
    bound = max(4 * expected, FLOOR)
    found: dict[Key, bytes] = {}
    try:
        for page in api.pages(rtype.path(), what=f"list {rtype.qualified} in the destination",
                              limit=PAGE, timeout=TIMEOUT):
            for live in page.get("items") or []:
                meta = live.get("metadata") or {}
                if meta.get("deletionTimestamp") or not meta.get("name"):
                    continue
                live.setdefault("apiVersion", rtype.api_version)
                live.setdefault("kind", rtype.kind)
                found[(meta.get("namespace") if rtype.namespaced else None, meta["name"])] = fingerprint(rtype, live)
            if len(found) > bound:
                return None, f"the destination holds over {bound} of them"
    except KubeError as exc:
        return None, f"cannot list them in the destination ({exc})"
    return found, ""
