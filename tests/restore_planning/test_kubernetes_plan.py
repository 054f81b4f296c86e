"""A whole-plan restore with a kubernetes source on the emulated API server (tests/harness).

The training cluster's trainer pulls its image from the cluster's own registry (planted: lost
with the cluster). Without a remap the kubernetes step is refused; with the plan's registry
remap to the surviving registry it runs after the Git declarations, and the restored
Deployment pulls from the surviving registry.
"""

from __future__ import annotations

import json
import os

import pytest

from dr.cli.exitcodes import Exit
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.restore_planning.worlds import IN_CLUSTER_REGISTRY, SURVIVING_REGISTRY

TRAINER = f"{IN_CLUSTER_REGISTRY}/team/trainer:v1"
API = f"{SURVIVING_REGISTRY}/team/api:v2"


def _deployment(name: str, image: str) -> dict:
    pod = {"containers": [{"name": name, "image": image, "envFrom": [{"secretRef": {"name": "db"}}]}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "training"},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}


@pytest.fixture
def clusters(tmp_path):
    source, dest = EmulatedCluster(name="source").start(), EmulatedCluster(name="dest").start()
    try:
        source.create_objects([
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "training"}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "training"},
             "stringData": {"pw": "x"}},
            _deployment("trainer", TRAINER), _deployment("api", API)])
        kubeconfig = write_kubeconfig(os.path.join(tmp_path, "kubeconfig"), {"source": source, "dest": dest})
        yield kubeconfig, dest, source
    finally:
        source.stop()
        dest.stop()


@pytest.fixture
def platform(world, clusters, capsys):
    kubeconfig, dest, _ = clusters
    world.sources = [world.sources[0], {"name": "cluster", "type": "kubernetes", "kubeconfig": kubeconfig,
                                        "context": "source", "namespaces": ["training"],
                                        "workload_kinds": ["Deployment"]}]
    world.backup()
    capsys.readouterr()
    return world, kubeconfig, dest


def _plan(w, capsys, *extra) -> tuple[int, dict]:
    code = w.dr(*w.restore_args(*extra, "--json"))
    return code, json.loads(capsys.readouterr().out)


def test_image_only_in_the_failed_cluster_refuses_the_kubernetes_step(platform, capsys):
    w, kubeconfig, dest = platform
    code, doc = _plan(w, capsys, "--to", f"cluster={kubeconfig}:dest", "--dry-run")
    assert code == Exit.BLOCKERS
    cluster = next(s for s in doc["steps"] if s["name"] == "cluster")
    assert cluster["status"] == "refused"
    [blocker] = [n for n in cluster["needs"] if n["verdict"] == "blocker"]
    assert (blocker["kind"], blocker["reference"]) == ("image", TRAINER)
    verdicts = {n["reference"]: n["verdict"] for n in cluster["needs"]}
    assert verdicts[API] == "ok" and verdicts["secret:training/db"] == "ok"  # the snapshot brings the Secret


def test_a_dry_run_without_the_identity_finds_the_sealed_secret_the_deployments_need(platform, capsys, monkeypatch):
    """The Secret's batch is sealed (format.md 8.1): planned without --identity, its keyed
    `provides` are matched with the plan's name key, so the verdict is the same as with it."""
    w, kubeconfig, _ = platform
    monkeypatch.delenv("DR_AGE_IDENTITY_FILE", raising=False)
    without = ["restore", "--plan", w.plan, "--failed", "cluster-a", "--to", f"cluster={kubeconfig}:dest", "--dry-run"]
    for args in (without, w.restore_args("--to", f"cluster={kubeconfig}:dest", "--dry-run")):
        assert w.dr(*args, "--json") == Exit.BLOCKERS  # the trainer's image only, as above
        cluster = next(s for s in json.loads(capsys.readouterr().out)["steps"] if s["name"] == "cluster")
        [secret] = [n for n in cluster["needs"] if n["reference"] == "secret:training/db"]
        assert (secret["verdict"], secret["provider"]) == ("ok", "cluster"), secret
        assert "the snapshot holds it" in secret["reason"]
        assert [n["kind"] for n in cluster["needs"] if n["verdict"] == "blocker"] == ["image"]


def test_after_a_rotation_a_dry_run_without_the_identity_says_the_sealed_lines_cannot_be_matched(
        platform, capsys, monkeypatch):
    """The plan's recipients changed since the backup: its name key matches none of the sealed
    lines, so the verdict says so instead of a bare 'no copy'; the identity still opens them."""
    from dr.repository.encryption import generate_identity
    w, kubeconfig, _ = platform
    monkeypatch.delenv("DR_AGE_IDENTITY_FILE", raising=False)
    w.recipient = generate_identity()[1]
    dest = ("--to", f"cluster={kubeconfig}:dest", "--dry-run", "--json")
    w.dr("restore", "--plan", w.plan, "--failed", "cluster-a", *dest)
    cluster = next(s for s in json.loads(capsys.readouterr().out)["steps"] if s["name"] == "cluster")
    [secret] = [n for n in cluster["needs"] if n["reference"] == "secret:training/db"]
    assert secret["verdict"] != "ok" and "cannot be matched without --identity" in secret["reason"], secret
    w.dr(*w.restore_args(*dest))
    cluster = next(s for s in json.loads(capsys.readouterr().out)["steps"] if s["name"] == "cluster")
    assert {n["reference"]: n["verdict"] for n in cluster["needs"]}["secret:training/db"] == "ok"


def test_a_dry_run_that_refuses_a_step_for_want_of_a_destination_exits_4(platform, capsys):
    """Issue 10: without --to the kubernetes step is refused (no destination) while its verdict
    is blocker too; the dry run printed REFUSED [blocker] and exited 0."""
    w, _, _ = platform
    code, doc = _plan(w, capsys, "--dry-run")
    cluster = next(s for s in doc["steps"] if s["name"] == "cluster")
    assert cluster["status"] == "refused" and cluster["verdict"] == "blocker"
    assert code == Exit.BLOCKERS


def test_registry_remap_orders_git_first_and_restores_with_the_surviving_registry(platform, capsys):
    w, kubeconfig, dest = platform
    w.remaps.append({"kind": "registry", "old": IN_CLUSTER_REGISTRY, "new": SURVIVING_REGISTRY,
                     "reason": "images mirrored by digest"})
    code, doc = _plan(w, capsys, "--to", f"cluster={kubeconfig}:dest", "--dry-run")
    assert code == Exit.OK
    steps = {s["name"]: s for s in doc["steps"]}
    assert (steps["declarations"]["level"], steps["cluster"]["level"]) == (1, 2)
    assert [a["step"] for a in steps["cluster"]["after"]] == ["declarations"]
    trainer = next(n for n in steps["cluster"]["needs"] if n["reference"] == TRAINER)
    assert trainer["verdict"] == "remapped" and "cloud/region-b" in trainer["reason"]
    assert steps["cluster"]["destinations"][0]["remap"] == {f"image-registry:{IN_CLUSTER_REGISTRY}": SURVIVING_REGISTRY}

    code, doc = _plan(w, capsys, "--to", f"cluster={kubeconfig}:dest")
    assert code == Exit.OK, doc["run"]
    restored = dest.get_object("apps/v1", "Deployment", "trainer", "training")
    assert restored["spec"]["template"]["spec"]["containers"][0]["image"] == f"{SURVIVING_REGISTRY}/team/trainer:v1"
    assert dest.get_object("v1", "Secret", "db", "training") is not None
    records = [json.loads(p.read_text()) for p in w.journal_files()]
    order = [r["step"] for r in records if r["record"] == "step"]
    assert order == ["declarations", "cluster"]  # the journal shows the order it happened in


VAULT = "https://vault.cluster-a.internal:8200"


@pytest.fixture
def platform_with_vault(world, clusters, capsys):
    """The platform above, plus a cert-manager ClusterIssuer (upstream CRD) signing with a Vault
    inside the failed cluster: a secret-store dependency, which no exporter of the plan remaps."""
    from tests.kubernetes.upstream import upstream, wait_established
    kubeconfig, _, source = clusters
    crds = upstream("cert-manager/crds/cert-manager.io_clusterissuers.yaml")
    source.create_objects(crds)
    wait_established(source, crds)
    source.create_objects([{"apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer", "metadata": {"name": "vault"},
                            "spec": {"vault": {"server": VAULT, "path": "pki/sign/ml"}}}])
    world.sources = [world.sources[0], {"name": "cluster", "type": "kubernetes", "kubeconfig": kubeconfig,
                                        "context": "source", "namespaces": ["training"]}]
    world.backup()
    capsys.readouterr()
    return world, kubeconfig


def test_the_advice_names_only_remap_kinds_the_plan_accepts(platform_with_vault, capsys):
    import re
    w, kubeconfig = platform_with_vault
    code, doc = _plan(w, capsys, "--to", f"cluster={kubeconfig}:dest", "--dry-run")
    assert code == Exit.BLOCKERS
    cluster = next(s for s in doc["steps"] if s["name"] == "cluster")
    blockers = {n["kind"]: n["reason"] for n in cluster["needs"] if n["verdict"] == "blocker"}
    assert set(blockers) == {"image", "secret-store"}, blockers
    assert "no remap applies" in blockers["secret-store"] and "declare a remap" not in blockers["secret-store"]
    assert "declare a remap of kind registry" in blockers["image"]
    named = {k for reason in blockers.values() for m in re.findall(r"remap of kind ([\w-]+(?: or [\w-]+)*)", reason)
             for k in m.split(" or ")}
    for kind in named:  # each is one the plan's schema takes
        w.remaps.append({"kind": kind, "old": IN_CLUSTER_REGISTRY, "new": SURVIVING_REGISTRY})
    code, doc = _plan(w, capsys, "--to", f"cluster={kubeconfig}:dest", "--dry-run")
    assert code == Exit.BLOCKERS  # a plan, not a plan error (USAGE): only the Vault still blocks
    cluster = next(s for s in doc["steps"] if s["name"] == "cluster")
    assert {n["kind"] for n in cluster["needs"] if n["verdict"] == "blocker"} == {"secret-store"}
