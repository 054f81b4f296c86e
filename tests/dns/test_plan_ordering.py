"""The dns and etcd exporters in a whole-plan restore: DNS cutover last, after the workloads, and
held back when they did not come back; a record pointing into the failed domain is a blocker until
a record-target remap moves it (planning only: real catalogs, nothing restored)."""

from __future__ import annotations

from datetime import datetime, timezone

import yaml

from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.model.plan_loading import parse_plan
from dr.model.snapshots import Snapshot, SourceResult
from dr.planner.planning import plan_restore

SOURCES = [("cluster", "kubernetes"), ("dns", "dns"), ("control-plane", "etcd")]
INGRESS_A = "ingress.cluster-a.internal"


def _plan(remaps=()):
    data = {"version": 1, "name": "cutover",
            "failure_domains": [{"name": "cloud", "kind": "provider", "children": [
                {"name": "region-a", "kind": "region", "children": [{"name": "cluster-a", "kind": "cluster"}]},
                {"name": "region-b", "kind": "region", "children": [{"name": "cluster-b", "kind": "cluster"}]}]}],
            "locations": [{"name": "a", "domain": "cluster-a", "hosts": ["*.cluster-a.internal"]},
                          {"name": "b", "domain": "cluster-b", "hosts": ["*.cluster-b.internal"]}],
            "protects_against": ["cluster-a"],
            "targets": [{"name": "dr", "url": "/nonexistent/repo", "domain": "region-b"}],
            "sources": [{"name": n, "type": t} for n, t in SOURCES]}
    if remaps:
        data["restore"] = {"remaps": list(remaps)}
    return parse_plan(yaml.safe_dump(data), "/nonexistent/plan.yaml")


def _artifacts() -> list[Artifact]:
    def artifact(source, exporter, kind, identity, deps=(), **meta):
        return Artifact(source, exporter, kind, identity, 10, Sensitivity.INTERNAL, [], "", False,
                        [Dependency(k, r, d) for k, r, d in deps], meta)
    return [
        artifact("cluster", "kubernetes", "kubernetes-objects", "deployments.apps/shop",
                 [("image", "ecr.region-b.example.com/shop:v1", "")], workload=True),
        artifact("dns", "dns", "dns-zone", "shop.example", [("dns-target", INGRESS_A, "shop.example. CNAME ttl=600")],
                 origin="dns://10.9.0.53:53/shop.example.", zone="shop.example.", max_ttl=600),
        artifact("control-plane", "etcd", "etcd-snapshot", "cp"),
    ]


def _restore(plan, **kwargs):
    snapshot = Snapshot("cutover", datetime.now(timezone.utc), "h", "0" * 64, 3,
                        [SourceResult(n, t, 1, 10) for n, t in SOURCES], id="1" * 64)
    return plan_restore(plan, snapshot, _artifacts(), plan.target("dr"), failed=["cluster-a"],
                        destinations={"cluster": "ctx-b", "control-plane": "/scratch/etcd"}, **kwargs)


REMAP = {"kind": "record-target", "old": INGRESS_A, "new": "ingress.cluster-b.internal",
         "reason": "the recovery cluster's ingress"}


def test_dns_cutover_is_the_last_step_and_requires_the_workloads():
    rp = _restore(_plan([REMAP]))
    levels = [[s.name for s in level] for level in rp.levels()]
    assert levels[-1] == ["dns"], levels
    assert levels.index(["control-plane"]) < levels.index(["cluster"])  # etcd before the objects
    dns = rp.step("dns")
    assert "cluster" in dns.requires and "DNS cutover is the last step" in dns.after["cluster"]


def test_a_record_into_the_failed_cluster_needs_a_cutover_remap():
    refused = _restore(_plan()).step("dns")
    assert refused.status == "refused" and INGRESS_A in refused.reason
    remapped = _restore(_plan([REMAP])).step("dns")
    assert remapped.status == "ready", remapped.reason


def test_the_rto_estimate_waits_for_the_zones_largest_ttl_and_only_when_the_cutover_runs():
    """Resolvers keep the old answers for up to the TTL: a floor for every client that follows DNS."""
    from dr.model.plans import RtoSpec
    from dr.planner.estimating import estimate

    parts = {p.name: p for p in estimate(RtoSpec(), _restore(_plan([REMAP])).steps, []).parts}
    assert parts["propagation"].seconds == 600
    assert "shop.example." in parts["propagation"].basis and "600 s" in parts["propagation"].basis
    # a refused cutover changes no record: nothing to wait for
    refused = {p.name: p for p in estimate(RtoSpec(), _restore(_plan()).steps, []).parts}
    assert refused["propagation"].seconds == 0.0
