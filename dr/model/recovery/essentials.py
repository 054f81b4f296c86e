"""What every restore needs besides the artifacts' own dependencies: the essentials.

- dr's repository targets (targets[].domain);
- the credentials that reach each target (targets[].credentials_location), declared or, for a
  remote store, expected;
- the private key that decrypts secret content (encryption.key_location), when needed;
- dr's own image (dr_image): the restore job has to be pulled from somewhere.

None of these can be rebuilt from the snapshot (the snapshot is behind them), so no remap
applies: an essential is ok when placed in a surviving domain, a blocker when placed in a lost
one (or at a location lost alone: the key in a secret store that failed), unknown when nothing places it or the plan does not declare it. The audit turns the
verdicts into findings (dr.audit.essentials); a restore plan into the needs of every step
(dr.planner.needs: its own target, that target's credentials, the key).
"""

from __future__ import annotations

from dataclasses import dataclass

from dr.model.plans import Plan, TargetSpec
from dr.model.recovery.judging import Placements
from dr.model.recovery.scenarios import lost_at
from dr.model.recovery.verdicts import BLOCKED, OK, UNKNOWN, Verdict

TARGET, CREDENTIALS, KEY, DR_IMAGE = "target", "credentials", "key", "dr-image"


@dataclass(frozen=True)
class Essential:
    role: str  # target, credentials, key, dr-image
    name: str  # the target's name, or the plan field
    reference: str  # "" when the plan does not declare it
    domain: str | None
    how: str | None  # how it was placed
    owner: str | None = None  # the target it belongs to (targets and credentials)
    location: str | None = None  # the plan's location that placed it, if one did


def essentials(plan: Plan, placements: Placements, needs_key: bool) -> list[Essential]:
    """The plan's essentials, placed; the key only when needs_key (anything is encrypted)."""
    items = []
    for target in plan.spec.targets:
        items.append(Essential(TARGET, target.name, target.url, target.domain, "targets[].domain", target.name))
        if target.credentials_location or _remote(target):
            items.append(_placed(placements, CREDENTIALS, f"{target.name} credentials",
                                 target.credentials_location, owner=target.name))
    if needs_key:
        items.append(_placed(placements, KEY, "encryption.key_location", plan.spec.encryption.key_location))
    items.append(_placed(placements, DR_IMAGE, "dr_image", plan.spec.dr_image))
    return items


def _remote(target: TargetSpec) -> bool:
    return "://" in target.url and not target.url.lower().startswith("file://")


def _placed(placements: Placements, role: str, name: str, reference: str | None,
            owner: str | None = None) -> Essential:
    if not reference:
        return Essential(role, name, "", None, None, owner)
    placement = placements.place(reference)
    return Essential(role, name, reference, placement.domain, placements.how(placement), owner, placement.location)


@dataclass(frozen=True)
class EssentialVerdicts:
    """Every essential's verdict in one scenario."""

    verdicts: tuple[tuple[Essential, Verdict], ...]

    def blocked(self, role: str, owner: str | None = None) -> list[Essential]:
        """The essentials of this role (and owner, when given) that are lost."""
        return [item for item, verdict in self.verdicts if verdict == BLOCKED and item.role == role
                and (owner is None or item.owner == owner)]

    @property
    def lost_targets(self) -> set[str]:
        return {item.name for item in self.blocked(TARGET)}

    @property
    def surviving_targets(self) -> list[str]:
        lost = self.lost_targets
        return [item.name for item, _ in self.verdicts if item.role == TARGET and item.name not in lost]

    def reachable(self, target: str) -> bool:
        """Whether the target survives and so do the credentials that reach it: only then do the
        copies of a snapshot stored there count."""
        return not self.blocked(TARGET, target) and not self.blocked(CREDENTIALS, target)


def judge_essentials(items: list[Essential], lost: frozenset[str],
                     lost_locations: frozenset[str] = frozenset()) -> EssentialVerdicts:
    """lost_locations: locations lost while their domains stay up (kind:/location: scenarios)."""
    return EssentialVerdicts(tuple((item, _verdict(item, lost, lost_locations)) for item in items))


def _verdict(item: Essential, lost: frozenset[str], lost_locations: frozenset[str]) -> Verdict:
    if item.domain is None:
        return UNKNOWN
    return BLOCKED if lost_at(item.domain, item.location, lost, lost_locations) else OK
