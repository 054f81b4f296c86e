"""Creates an admission webhook refused: tried again after the rest of their level, a bounded number of times.

A validating webhook may refuse an object whose prerequisite is not there yet (Kubeflow
Trainer refuses a TrainJob until its runtime exists; a webhook may also lag behind its own
informer cache). Ordering by references (ordering.py) creates the prerequisite first wherever
the backup knows it; this is the safety net for what it does not know, for reference cycles it
set aside, and for a webhook that has not yet seen an object restored a moment ago.

A refusal is an answer 400, 403 or 422 whose message says `admission webhook "<name>" denied
the request` (kube-apiserver's wording for every validating and mutating webhook). Anything
else fails the item at once: a webhook's refusal is the only kind that waiting can change.
After a level's other objects, the refused ones are tried again, up to RETRIES times with a
growing pause between rounds (DELAYS); an object still refused then fails with its last
refusal as its reason.
"""

from __future__ import annotations

from dr.exporters.kubernetes.requesting import KubeError

REFUSAL_CODES = frozenset({400, 403, 422})
DELAYS = (0.25, 0.5, 1.0, 2.0)  # seconds before each round of retries: about 4 s in all
RETRIES = len(DELAYS)


def refused_by_webhook(exc: KubeError) -> bool:
    message = str(exc)
    return exc.status in REFUSAL_CODES and "admission webhook" in message and "denied the request" in message


def retried_reason(reason: str, refusals: int) -> str:
    """The reason of an object created after `refusals` refusals."""
    times = "once" if refusals == 1 else f"{refusals} times"
    return f"{reason} (an admission webhook refused it {times} first; tried again after the rest of its level)"


def final_reason(exc: KubeError, refusals: int) -> str:
    return (f"refused by an admission webhook {refusals} times, the last after the rest of its level: {exc}; "
            "create what the webhook asks for, then restore again (existing objects are compared, not duplicated)")
