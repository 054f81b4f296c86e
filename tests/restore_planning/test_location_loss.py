"""Scenarios in which locations fail while their domains stay up (`kind:registry`,
`kind:secret-store`, `location:NAME`): judged by the one verdict engine, named by `dr audit
--failed`, and drilled by `dr drill --matrix` (registry loss and secret-store loss), on the
restore-planning world (real Git remotes, files, a real repository)."""

from __future__ import annotations

import json

import pytest
import yaml

from dr.audit import location_scenarios
from dr.cli.exitcodes import Exit
from dr.model.plan_loading import load_plan
from dr.model.recovery import (BLOCKED, OK, Evidence, RecoveryJudge, UnknownDomain, UnknownLoss, lost_domains,
                               scenario)
from tests.restore_planning.worlds import SURVIVING_REGISTRY

HARBOR = "harbor.cluster-a.internal"


def _with_harbor(w) -> str:
    """The world's plan plus the platform's own registry, in the protected cluster."""
    data = w.plan_data()
    data["locations"].append({"name": "harbor", "domain": "cluster-a", "kind": "registry", "hosts": [HARBOR]})
    path = w.root / "plan-harbor.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _judge(plan, failed: list[str]) -> RecoveryJudge:
    failure = scenario(plan.domains, failed, plan.placer.locations, plan.spec.protects_against)
    return RecoveryJudge(Evidence(plan, {}, lambda c: True), failure.lost, True, lost_locations=failure.lost_locations)


def test_registry_loss_loses_the_protected_registries_and_keeps_their_domains(world):
    plan = load_plan(_with_harbor(world))
    failure = scenario(plan.domains, ["kind:registry"], plan.placer.locations, plan.spec.protects_against)
    # ecr is a registry too, but in region-b, which the plan does not protect: it is the DR copy's home
    assert failure.lost_locations == {"harbor"} and failure.lost == frozenset()
    assert failure.label == "the registry locations (harbor) fail (their domains stay up)"
    assert failure.lost_summary == "location harbor" and failure.failed_domains == ()
    judge = _judge(plan, ["kind:registry"])
    assert judge.judge(f"{HARBOR}/train/trainer:1.4").verdict == BLOCKED
    assert judge.judge(f"{SURVIVING_REGISTRY}/train/trainer:1.4").verdict == OK
    # the cluster itself survives this scenario: what else it places is fine
    assert judge.judge("k8s://cluster-a/ns/secret/x").verdict == OK
    assert lost_domains(plan.domains, ["kind:registry"]) == frozenset()


def test_secret_store_loss_and_one_named_location(world):
    plan = load_plan(_with_harbor(world))
    judge = _judge(plan, ["kind:secret-store"])
    assert judge.lost_locations == {"cluster-secrets"}  # escrow is in region-b, unprotected
    assert judge.judge("k8s://cluster-a/ns/secret/x").verdict == BLOCKED
    assert judge.judge(f"{HARBOR}/train/trainer:1.4").verdict == OK
    one = _judge(plan, ["location:escrow"])
    assert one.judge("https://escrow.region-b.example.com/keys/dr").verdict == BLOCKED
    # a domain and a location together
    both = scenario(plan.domains, ["region-b", "location:harbor"], plan.placer.locations, plan.spec.protects_against)
    assert both.lost == {"region-b"} and both.lost_locations == {"harbor"}
    assert both.label == "region-b (region) and location harbor fail"


@pytest.mark.parametrize("name, valid", [("kind:dns", "kind:registry, kind:secret-store"),
                                         ("location:nope", "location:gitea")])
def test_an_unknown_loss_names_what_is_valid(world, name, valid):
    plan = load_plan(_with_harbor(world))
    with pytest.raises(UnknownLoss) as caught:
        scenario(plan.domains, [name], plan.placer.locations, plan.spec.protects_against)
    assert isinstance(caught.value, UnknownDomain) and valid in str(caught.value)


def test_audit_names_a_registry_loss_and_a_bad_one_is_a_usage_error(world, capsys):
    world.backup()
    plan = _with_harbor(world)
    capsys.readouterr()
    world.dr("audit", "--plan", plan, "--failed", "kind:registry", "--json")
    scenarios = json.loads(capsys.readouterr().out)["scenarios"]
    assert [(s["failed"], s["lost_domains"], s["lost_locations"]) for s in scenarios] == \
        [(["kind:registry"], [], ["harbor"])]
    assert world.dr("audit", "--plan", plan, "--failed", "kind:nope") == Exit.USAGE
    assert "kind:registry" in capsys.readouterr().err


def test_the_matrix_adds_registry_and_secret_store_loss(world, capsys):
    world.backup()
    plan = _with_harbor(world)
    capsys.readouterr()
    code = world.dr("drill", "--plan", plan, "--matrix", "--to", str(world.root / "scratch"),
                    "--identity", str(world.identity_file), "--json")
    result = json.loads(capsys.readouterr().out)
    assert result["scenarios"] == ["cluster-a", "region-a", "kind:registry", "kind:secret-store"]
    by_name = {r["scenario"]: r for r in result["rows"]}
    # nothing the world restores needs the registry or the cluster's secret store: all recover,
    # each restored into its own folder
    assert by_name["kind:registry"]["result"] == "recovered" == by_name["kind:secret-store"]["result"]
    assert (world.root / "scratch" / "kind_registry" / "config").is_dir()
    assert code == Exit.OK and all(r["result"] == "recovered" for r in result["rows"])
    # its twin: the world's own plan has no registry in a protected domain (ecr is the DR side's)
    assert [s.name for s in location_scenarios(load_plan(world.plan))] == ["kind:secret-store"]


def test_a_key_kept_in_the_lost_secret_store_is_a_blocker_of_that_scenario(world, capsys):
    world.key_location = "k8s://cluster-a/dr-system/secret/age-key"  # cluster-secrets, in cluster-a
    world.backup()
    capsys.readouterr()
    assert world.dr("audit", "--plan", world.plan, "--failed", "kind:secret-store", "--json") == Exit.BLOCKERS
    found = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "key-in-failed-domain"]
    assert len(found) == 1 and "location cluster-secrets" in found[0]["message"]
    # its twin: the key in the escrow (a secret store in region-b, which the plan does not protect)
    world.key_location = "https://escrow.region-b.example.com/keys/dr"
    assert world.dr("audit", "--plan", world.plan, "--failed", "kind:secret-store", "--json") == Exit.OK
    assert not [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "key-in-failed-domain"]
