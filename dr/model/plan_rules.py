"""Rules a plan must satisfy across fields, each reported as (field path, found, expected).

The schema (dr.model.plans) checks each field alone; these check how fields refer to each
other, and the one rule that makes a plan disaster recovery at all: some target must survive
every domain the plan protects against.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterator

from dr.model.artifacts import Sensitivity
from dr.model.plans import PlanSpec, all_domains, build_domain_tree

Finding = tuple[str, str, str]


def check(spec: PlanSpec) -> list[Finding]:
    return [
        *_unique_names(spec),
        *_domain_references(spec),
        *_domain_regions(spec),
        *_target_survives(spec),
        *_source_targets(spec),
        *_recipients(spec),
        *_target_urls(spec),
    ]


def _target_urls(spec: PlanSpec) -> Iterator[Finding]:
    for i, target in enumerate(spec.targets):
        scheme = target.url.split("://", 1)[0].lower() if "://" in target.url else ""
        if scheme not in ("", "file", "s3"):
            yield (f"targets[{i}].url", f"'{target.url}'",
                   "an s3://bucket/prefix URL, a file:// URL or a local path")
        elif scheme != "s3" and (target.endpoint_url or target.region):
            yield (f"targets[{i}].url", f"'{target.url}' with endpoint_url/region set",
                   "an s3:// URL (endpoint_url and region apply only to S3 targets)")
        if scheme != "s3" and target.immutability is not None:
            yield (f"targets[{i}].immutability", f"immutability on target '{target.name}', which is not "
                   f"an S3 bucket ('{target.url}')",
                   "an s3:// target (only S3 Object Lock makes objects immutable), or no immutability")


def _unique_names(spec: PlanSpec) -> Iterator[Finding]:
    tree_names = list(_all_domain_names(spec))
    groups = {
        "failure_domains": tree_names,
        "locations": [loc.name for loc in spec.locations],
        "targets": [t.name for t in spec.targets],
        "sources": [s.name for s in spec.sources],
    }
    for group, names in groups.items():
        for name, count in Counter(names).items():
            if count > 1:
                yield group, f"the name '{name}' {count} times", "each name once"


def _all_domain_names(spec: PlanSpec) -> Iterator[str]:
    stack = list(spec.failure_domains)
    while stack:
        domain = stack.pop()
        yield domain.name
        stack.extend(domain.children)


def _domain_regions(spec: PlanSpec) -> Iterator[Finding]:
    """`region` names the cloud region of a region domain, and `zone` the cloud zone of a zone
    domain, each once: a reference naming it (a volume in the zone) is placed there."""
    for kind in ("region", "zone"):
        seen: dict[str, str] = {}
        for domain in all_domains(spec.failure_domains):
            named = getattr(domain, kind)
            if named and domain.kind != kind:
                yield (f"failure_domains: {domain.name}.{kind}", f"{kind} '{named}' on a domain of kind "
                       f"{domain.kind}", f"{kind} only on a domain of kind {kind} (its cloud {kind}'s name)")
            elif domain.kind == kind:
                cloud = named or domain.name
                if cloud in seen:
                    yield (f"failure_domains: {domain.name}.{kind}", f"cloud {kind} '{cloud}' also the {kind} of "
                           f"domain {seen[cloud]}", f"each cloud {kind} in one domain")
                seen.setdefault(cloud, domain.name)


def _domain_references(spec: PlanSpec) -> Iterator[Finding]:
    known = set(_all_domain_names(spec))
    expected = f"a failure domain declared under failure_domains ({', '.join(sorted(known))})"
    refs = [(f"locations[{i}].domain", loc.domain) for i, loc in enumerate(spec.locations)]
    refs += [(f"placement_rules[{i}].domain", r.domain) for i, r in enumerate(spec.placement_rules)]
    refs += [(f"targets[{i}].domain", t.domain) for i, t in enumerate(spec.targets)]
    refs += [(f"protects_against[{i}]", d) for i, d in enumerate(spec.protects_against)]
    for path, name in refs:
        if name not in known:
            yield path, f"'{name}'", expected


def _target_survives(spec: PlanSpec) -> Iterator[Finding]:
    tree = build_domain_tree(spec.failure_domains)
    protected = [d for d in spec.protects_against if d in tree]
    if not protected or any(t.domain not in tree for t in spec.targets):
        return
    survivors = [t for t in spec.targets
                 if not any(tree.is_lost(t.domain, [d]) for d in protected)]
    if not survivors:
        inside = ", ".join(f"{t.name} in {tree.path(t.domain)}" for t in spec.targets)
        yield ("targets", f"every target inside a protected domain ({inside})",
               "at least one target outside every domain in protects_against "
               f"({', '.join(protected)}): a backup lost with the cluster is not disaster recovery")


def _source_targets(spec: PlanSpec) -> Iterator[Finding]:
    names = {t.name for t in spec.targets}
    for i, source in enumerate(spec.sources):
        for j, target in enumerate(source.targets):
            if target not in names:
                yield (f"sources[{i}].targets[{j}]", f"'{target}'",
                       f"a target declared under targets ({', '.join(sorted(names))})")


def _recipients(spec: PlanSpec) -> Iterator[Finding]:
    import pyrage

    for i, recipient in enumerate(spec.encryption.recipients):
        path = f"encryption.recipients[{i}]"
        if recipient.strip().upper().startswith("AGE-SECRET-KEY-"):
            yield (path, "a private age key (redacted)",
                   "a public key (age1...): the private key must never be in the plan; "
                   "keep it where restores can reach it and declare that place as key_location")
            continue
        try:
            pyrage.x25519.Recipient.from_str(recipient.strip())
        except Exception:
            yield path, f"'{recipient[:20]}...'", "an age X25519 public key (age1...)"
    secret_sources = [s for s in spec.sources if s.sensitivity == Sensitivity.SECRET]
    if secret_sources and not spec.encryption.recipients:
        yield ("encryption.recipients", "no recipients",
               f"at least one age public key: sources {', '.join(s.name for s in secret_sources)} "
               "hold secret material, which is stored only encrypted")
