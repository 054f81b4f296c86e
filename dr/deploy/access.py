"""RBAC from the API reads the sources declare: least privilege, said out loud where it is not.

The backup gets one ClusterRole of get/list/watch on exactly the resources read cluster-wide,
bound to its ServiceAccount, and one of the resources read only in some namespaces, bound there
by RoleBindings. What sources write (ApiWrite: the checkpoints shards' Jobs) is granted only in
the namespace they write in, by a Role and RoleBinding there, with exactly the verbs asked for;
a wildcard there is refused. The restore's ClusterRole may also write what the backup reads; it is rendered
and never bound: a person binds it for the duration of a restore (docs/deploy.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from dr.contract import ApiRead, ApiWrite

READ = ["get", "list", "watch"]
WRITE = ["get", "list", "watch", "create", "update", "patch"]


@dataclass
class Access:
    cluster_rules: list[dict]  # read cluster-wide
    namespaced_rules: list[dict]  # read in `namespaces` only
    namespaces: list[str]
    reads_everything: bool  # some source reads * in *: said in a comment and the output
    why: list[str]


def access(reads: list[ApiRead]) -> Access:
    cluster: dict[str, set[str]] = {}
    namespaced: dict[str, set[str]] = {}
    namespaces: set[str] = set()
    for read in reads:
        into = namespaced if read.namespaces else cluster
        into.setdefault(read.group, set()).update(read.resources)
        namespaces.update(read.namespaces)
    everything = "*" in cluster.get("*", set())
    why = sorted({f"{r.group or 'core'}: {r.why}" for r in reads if r.why})
    return Access(_rules(cluster, READ), _rules(namespaced, READ), sorted(namespaces), everything, why)


@dataclass
class Grant:
    """Writes in one namespace: a Role's rules there, and why."""

    namespace: str
    rules: list[dict]
    why: list[str]


class WildcardWrite(ValueError):
    """An ApiWrite naming every group, resource or verb: never granted."""


def writes(asked: list[ApiWrite], release_namespace: str) -> list[Grant]:
    """One Grant per namespace written in (none named: the release's), verbs merged per resource."""
    verbs: dict[str, dict[tuple[str, str], set[str]]] = {}
    why: dict[str, set[str]] = {}
    for write in asked:
        if "*" in (write.group, *write.resources, *write.verbs):
            raise WildcardWrite(f"a write grant must name its group, resources and verbs, not '*' "
                                f"({write.group or 'core'}: {', '.join(write.resources)}: {write.why})")
        namespace = write.namespace or release_namespace
        for resource in write.resources:
            verbs.setdefault(namespace, {}).setdefault((write.group, resource), set()).update(write.verbs)
        if write.why:
            why.setdefault(namespace, set()).add(f"{write.group or 'core'}: {write.why}")
    return [Grant(ns, _write_rules(verbs[ns]), sorted(why.get(ns, ()))) for ns in sorted(verbs)]


def _write_rules(verbs: dict[tuple[str, str], set[str]]) -> list[dict]:
    """One rule per group and verb set, resources sorted."""
    merged: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, resource), used in sorted(verbs.items()):
        merged.setdefault((group, tuple(sorted(used))), []).append(resource)
    return [{"apiGroups": [group], "resources": resources, "verbs": list(used)}
            for (group, used), resources in sorted(merged.items())]


def restore_rules(reads: list[ApiRead]) -> list[dict]:
    merged: dict[str, set[str]] = {}
    for read in reads:
        merged.setdefault(read.group, set()).update(read.resources)
    return _rules(merged, WRITE)


def _rules(resources: dict[str, set[str]], verbs: list[str]) -> list[dict]:
    """One rule per group, resources sorted; `*` alone when the group is read whole."""
    rules = []
    for group in sorted(resources):
        plurals = sorted(resources[group])
        rules.append({"apiGroups": [group], "resources": ["*"] if "*" in plurals else plurals, "verbs": list(verbs)})
    return rules
