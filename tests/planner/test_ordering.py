"""One dependency graph across exporters: the rules of dr.planner.ordering_rules, level by level.

Plans and catalogs here are real objects (a parsed plan, Artifact lines as exporters write them);
nothing is restored, so every exporter type can take part, including ones not installed.
"""

from __future__ import annotations

from datetime import datetime, timezone

import yaml

from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.model.plan_loading import parse_plan
from dr.model.snapshots import Snapshot, SourceResult
from dr.planner.ordering_rules import RULES
from dr.planner.planning import plan_restore

VAULT = "https://vault.cluster-a.internal:8200"  # lost with the cluster: the vault step's copy counts
TRAINER_IMAGE = "ecr.region-b.example.com/team/trainer:v1"


def _plan(sources: list[tuple[str, str]]):
    data = {"version": 1, "name": "order",
            "failure_domains": [{"name": "cloud", "kind": "provider", "children": [
                {"name": "region-a", "kind": "region", "children": [{"name": "cluster-a", "kind": "cluster"}]},
                {"name": "region-b", "kind": "region"}]}],
            "locations": [{"name": "b", "domain": "region-b", "hosts": ["*.region-b.example.com"]},
                          {"name": "a", "domain": "cluster-a", "hosts": ["*.cluster-a.internal"]}],
            "protects_against": ["cluster-a"],
            "targets": [{"name": "dr", "url": "/nonexistent/repo", "domain": "region-b"}],
            "sources": [{"name": n, "type": t} for n, t in sources]}
    return parse_plan(yaml.safe_dump(data), "/nonexistent/plan.yaml")


def _artifact(source: str, exporter: str, kind: str, identity: str, deps=(), **meta) -> Artifact:
    return Artifact(source, exporter, kind, identity, 10, Sensitivity.INTERNAL, [], "", False,
                    [Dependency(k, r) for k, r in deps], meta)


def _restore(sources, artifacts, failed=("cluster-a",), **kwargs):
    plan = _plan(sources)
    snapshot = Snapshot("order", datetime.now(timezone.utc), "h", "0" * 64, len(artifacts),
                        [SourceResult(n, t, 1, 10) for n, t in sources], id="1" * 64)
    return plan_restore(plan, snapshot, artifacts, plan.target("dr"), failed=list(failed),
                        destinations={n: f"/scratch/{n}" for n, _ in sources}, **kwargs)


PLATFORM = [("vault", "vault"), ("images", "images"), ("declarations", "git"), ("ckpt", "checkpoints"),
            ("cluster", "kubernetes"), ("notes", "files")]


def _platform_artifacts() -> list[Artifact]:
    return [
        _artifact("vault", "vault", "raft-snapshot", "vault", provides=[VAULT]),
        _artifact("images", "images", "oci-image", "trainer", provides=[TRAINER_IMAGE]),
        _artifact("declarations", "git", "git-bundle", "apps", [("git-remote", "https://git.region-b.example.com/apps")]),
        _artifact("ckpt", "checkpoints", "checkpoint-copy", "t/run/step-1", run="run", step=1, bytes=1),
        _artifact("cluster", "kubernetes", "kubernetes-objects", "jobs.batch/train",
                  [("image", TRAINER_IMAGE), ("secret-store", VAULT)], workload=True),
        _artifact("notes", "files", "file", "notes/a"),
    ]


def _levels(rp) -> list[list[str]]:
    return [[s.name for s in level] for level in rp.levels()]


def test_one_graph_orders_every_exporter_by_its_rules():
    rp = _restore(PLATFORM, _platform_artifacts())
    assert _levels(rp) == [["vault"], ["ckpt", "declarations", "images", "notes"], ["cluster"]]
    cluster = rp.step("cluster")
    assert set(cluster.after) == {"vault", "images", "declarations", "ckpt"}
    assert "Git declarations before" in cluster.after["declarations"]
    assert "checkpoints before training jobs" in cluster.after["ckpt"]
    # What the cluster's objects depend on and another step provides is REQUIRED, not just ordered.
    assert cluster.requires == {"vault"}  # the image survives in ECR: images goes first, not required
    assert "provides" in cluster.after["images"] and TRAINER_IMAGE in cluster.after["images"]
    assert rp.step("ckpt").after == {"vault": next(r[3] for r in RULES if r[0] == "@secret-stores")}
    assert [s.seq for s in rp.steps] == list(range(1, len(PLATFORM) + 1))


def test_a_step_needing_what_a_refused_step_provides_is_held():
    artifacts = _platform_artifacts()
    artifacts[1].dependencies.append(Dependency("registry", "https://mirror.cluster-a.internal/v2"))
    rp = _restore(PLATFORM, artifacts)
    artifacts[0].dependencies.append(Dependency("registry", "https://mirror.cluster-a.internal/v2"))
    assert rp.step("images").status == "refused"
    assert rp.step("cluster").status == "ready"  # the image survives in ECR: nothing relies on the step
    rp = _restore(PLATFORM, artifacts)
    assert rp.step("vault").status == "refused"
    cluster = rp.step("cluster")
    assert cluster.status == "held" and "step vault (refused)" in cluster.reason
    assert rp.step("declarations").status == "ready"  # not dependent: ordered, never held
    forced = _restore(PLATFORM, artifacts, force=True)
    assert forced.step("vault").status == "ready" and forced.step("vault").forced
    assert forced.step("cluster").status == "ready" and not forced.step("cluster").forced


def test_a_cycle_of_provides_is_restored_together_and_says_so():
    artifacts = [
        _artifact("a", "files", "file", "a", [("secret", "secret:x/b")], provides=["secret:x/a"]),
        _artifact("b", "files", "file", "b", [("secret", "secret:x/a")], provides=["secret:x/b"]),
        _artifact("c", "files", "file", "c"),
    ]
    rp = _restore([("a", "files"), ("b", "files"), ("c", "files")], artifacts)
    assert _levels(rp) == [["c"], ["a", "b"]]
    assert "cycle" in rp.step("a").after["(cycle)"]


def test_rules_are_data_with_reasons():
    for before, after, strength, why in RULES:
        assert before and after and strength in ("requires", "precedes") and len(why) > 40
