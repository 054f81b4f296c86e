"""The verdict engine (dr.model.recovery): the one place the audit, restore planning and drills judge.

Unit tests over the audit's planted platform plan (tests/audit/worlds) with in-memory artifacts,
then the same cases end to end: the audit and a restore plan over one snapshot get the same
verdicts because both ask the engine (what a parity test between two copies once checked).
"""

from __future__ import annotations

import json
import os

import pytest

from dr.audit import choose_audited_target, run_audit, scenarios_for
from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.model.plan_loading import load_plan
from dr.model.recovery import (BLOCKED, CREDENTIALS, DR_IMAGE, KEY, OK, REMAPPED, TARGET, UNKNOWN, VERDICTS, Evidence,
                               Placements, RecoveryJudge, UnknownDomain, Verdict, copies_of, essentials,
                               judge_essentials, normalize, scenario, service_facts, worst)
from dr.planner.planning import plan_restore
from dr.repository import layout
from dr.repository.catalogs import read_catalog
from tests.audit import worlds

W = worlds


def _plan(root, **changes):
    return load_plan(W.write_plan(root, W.plan_data(str(root / "repo"), **changes)))


@pytest.fixture
def plan(tmp_path):
    return _plan(tmp_path)


def _artifact(identity, provides=None, chunks=("c1",)):
    return Artifact("platform-git", "git", "repository", identity, 1, Sensitivity.INTERNAL, chunks=list(chunks),
                    dependencies=[Dependency("git-remote", W.GITEA_BUNDLED)],
                    meta={"provides": provides} if provides else {})


def _judge(plan, failed, artifacts=(), missing=frozenset(), survive=True, **kw):
    evidence = Evidence(plan, copies_of(artifacts), lambda c: not set(c.chunks) & missing)
    return RecoveryJudge(evidence, scenario(plan.domains, failed).lost, survive, **kw)


# -- verdicts ------------------------------------------------------------------------------------
def test_verdicts_write_the_strings_reports_and_journals_always_wrote():
    assert [v.value for v in VERDICTS] == ["ok", "remapped", "blocker", "unknown"]
    assert json.dumps({BLOCKED: [REMAPPED]}) == '{"blocker": ["remapped"]}'
    assert f"{UNKNOWN}|{OK:<4}|" == "unknown|ok  |" and str(BLOCKED) == "blocker"
    assert Verdict("blocker") is BLOCKED and "ok" == OK  # read back from JSON, it compares equal


def test_worst_is_by_severity_not_by_name():
    assert worst([]) is OK
    assert worst([OK, REMAPPED]) is REMAPPED
    assert worst([REMAPPED, UNKNOWN, OK]) is UNKNOWN
    assert worst([UNKNOWN, BLOCKED, REMAPPED]) is BLOCKED


# -- scenarios ------------------------------------------------------------------------------------
def test_a_domain_takes_everything_nested_in_it(plan):
    region = scenario(plan.domains, ["eu-west-1", "eu-west-1"])
    assert region.failed == ("eu-west-1",) and region.lost == {"eu-west-1", "train-eu1"}
    assert region.label == "eu-west-1 (region) fails" and region.loses("train-eu1") and not region.loses(None)
    both = scenario(plan.domains, ["train-eu1", "github"])
    assert both.name == "train-eu1+github" and both.lost == {"train-eu1", "github"}
    assert both.label == "train-eu1 (cluster) and github (provider) fail"
    assert scenario(plan.domains, []).label == "nothing has failed" and not scenario(plan.domains, []).lost


def test_an_unknown_domain_names_the_nearest(plan):
    with pytest.raises(UnknownDomain) as info:
        scenario(plan.domains, ["train-eu2"])
    assert info.value.nearest == "train-eu1" and "did you mean 'train-eu1'?" in str(info.value)


# -- the rules ------------------------------------------------------------------------------------
def test_placed_in_a_surviving_domain_is_ok(plan):
    j = _judge(plan, ["train-eu1"]).judge(W.ECR_IMAGE)
    assert (j.verdict, j.placement.domain, j.copy) == (OK, "us-east-1", None)


def test_placed_in_a_lost_domain_without_a_copy_is_a_blocker(plan):
    j = _judge(plan, ["train-eu1"]).judge(W.IN_CLUSTER_IMAGE)
    assert (j.verdict, j.placement.domain, j.note) == (BLOCKED, "train-eu1", "")
    assert _judge(plan, ["eu-west-1"]).judge(W.CKPT_BUCKET).verdict == BLOCKED


def test_a_surviving_copy_remaps_what_a_lost_domain_held(plan):
    # provided in another spelling: no '.git', a trailing '/'
    copy = _artifact("declarations", provides="https://gitea.apps.train-eu1.example.com/platform/declarations/")
    j = _judge(plan, ["train-eu1"], [copy]).judge(W.GITEA_BUNDLED)
    assert (j.verdict, j.copy.artifact, j.copy.source) == (REMAPPED, "platform-git/repository/declarations",
                                                           "platform-git")
    assert _judge(plan, ["train-eu1"], [copy]).judge(W.GITEA_UNCOPIED).verdict == BLOCKED
    # exporters record URLs redacted; a dependency that names the credentials still matches
    redacted = _artifact("declarations", provides="https://***@gitea.apps.train-eu1.example.com/platform/declarations")
    with_password = "https://bot:hunter2@gitea.apps.train-eu1.example.com/platform/declarations.git"
    assert _judge(plan, ["train-eu1"], [redacted]).judge(with_password).verdict == REMAPPED


def test_a_copy_missing_blobs_does_not_count(plan):
    copies = [_artifact("declarations", provides=[W.GITEA_BUNDLED], chunks=("gone",)),
              _artifact("mirror", provides=[W.GITEA_BUNDLED], chunks=("kept",))]
    j = _judge(plan, ["train-eu1"], copies, missing={"gone"}).judge(W.GITEA_BUNDLED)
    assert (j.verdict, j.copy.artifact) == (REMAPPED, "platform-git/repository/mirror")  # the next intact one
    j = _judge(plan, ["train-eu1"], copies[:1], missing={"gone"}).judge(W.GITEA_BUNDLED)
    assert j.verdict == BLOCKED and j.copy is None
    assert j.note == ("the copy in platform-git/repository/declarations is missing blobs "
                      "(run dr verify --read-data)")


def test_copies_lost_with_their_target_do_not_count(plan):
    copies = [_artifact("declarations", provides=[W.GITEA_BUNDLED])]
    j = _judge(plan, ["train-eu1"], copies, survive=False).judge(W.GITEA_BUNDLED)
    assert (j.verdict, j.copy) == (BLOCKED, None)
    assert j.note == "the copy in platform-git/repository/declarations is lost with the snapshot's target"
    audit = _judge(plan, ["train-eu1"], copies, survive=False, holder="the audited target")
    assert audit.judge(W.GITEA_BUNDLED).note.endswith("is lost with the audited target")


def test_placed_nowhere_is_unknown_unless_the_snapshot_brings_it_back(plan):
    j = _judge(plan, ["train-eu1"]).judge(W.UNPLACED)
    assert (j.verdict, j.placement.domain) == (UNKNOWN, None)
    secret = "secret:training/registry-token"
    copies = [Artifact("platform-k8s", "kubernetes", "secrets", "training", 1, Sensitivity.SECRET,
                       chunks=["s"], meta={"provides": [secret]})]
    j = _judge(plan, [], copies, survive=False).judge(secret)  # not placed: the snapshot's copy is enough
    assert (j.verdict, j.copy.artifact) == (OK, "platform-k8s/secrets/training")


def _service(name, fact):
    """A backed-up Service providing its DNS name, with what lies behind it."""
    return Artifact("platform-k8s", "kubernetes", "services", name, 1, Sensitivity.INTERNAL, chunks=["s"],
                    dependencies=[Dependency(fact, name, f"Service/{name}: Deployment ml/x")], meta={"provides": [name]})


def _judge_services(plan, artifacts, failed=("train-eu1",)):
    copies = copies_of(artifacts)
    facts = service_facts((d.kind, d.reference, d.detail) for a in artifacts for d in a.dependencies)
    return RecoveryJudge(Evidence(plan, copies, lambda c: True, services=facts), scenario(plan.domains, failed).lost, True)


def test_a_url_to_a_service_is_judged_as_the_service(plan):
    stateful = _judge_services(plan, [_service("db.ml.svc.cluster.local", "service-state")])
    for url in ("postgresql://***@db.ml.svc:5432/app", "grpc://db.ml.svc.cluster.local:50051", "http://db.ml.svc"):
        j = stateful.judge(url)
        assert (j.verdict, j.placement.domain) == (BLOCKED, "train-eu1") and "state behind service" in j.note, url
    stateless = _judge_services(plan, [_service("cache.ml.svc.cluster.local", "service-stateless")])
    j = stateless.judge("redis://cache.ml:6379/0")  # <svc>.<ns>: the snapshot holds that Service
    assert j.verdict == REMAPPED and j.note.startswith("recreated by the restore"), j
    # without the Service, `cache.ml` may be any outside host: placed nowhere, as before
    assert _judge_services(plan, []).judge("redis://cache.ml:6379/0").verdict == UNKNOWN
    # a Service the snapshot lacks: the Service name's verdict (placed by `*.svc.cluster.local`)
    assert _judge_services(plan, []).judge("http://ghost.ml.svc:8080/q").verdict == BLOCKED


def test_a_url_the_snapshot_provides_itself_keeps_its_copy(plan):
    """An in-cluster git server's bundle brings back its remote, whatever lies behind the Service."""
    bundle = _artifact("infra", provides=[W.GITEA_UNCOPIED])
    judge = _judge_services(plan, [bundle, _service("git.gitea.svc.cluster.local", "service-state")])
    j = judge.judge(W.GITEA_UNCOPIED)
    assert (j.verdict, j.copy.artifact, j.note) == (REMAPPED, "platform-git/repository/infra", "")
    assert judge.judge("https://git.gitea.svc.cluster.local/other/repo.git").verdict == BLOCKED  # not bundled


def test_a_url_to_a_service_only_the_plan_places_keeps_its_placement(tmp_path):
    url = "http://queue.ml.svc:8080/jobs"
    plan = _plan(tmp_path, placement_rules=[], locations=[
        {"name": "queue", "domain": "us-east-1", "kind": "http", "prefixes": ["http://queue.ml.svc:8080/"]}])
    j = _judge_services(plan, [], failed=("eu-west-1",)).judge(url)
    assert (j.verdict, j.placement.location) == (OK, "queue")
    j = _judge_services(plan, [], failed=("us-east-1",)).judge(url)
    assert (j.verdict, j.placement.domain) == (BLOCKED, "us-east-1")


def test_evidence_places_each_reference_and_checks_each_copy_once_for_every_scenario(plan):
    asked = []
    evidence = Evidence(plan, copies_of([_artifact("declarations", provides=[W.GITEA_BUNDLED])]),
                        lambda copy: asked.append(copy.artifact) or True)
    for failed in (["train-eu1"], ["eu-west-1"], ["train-eu1", "github"]):
        judge = RecoveryJudge(evidence, scenario(plan.domains, failed).lost, True)
        assert judge.judge(W.GITEA_BUNDLED).verdict == REMAPPED
        assert judge.judge(W.GITEA_BUNDLED + "/").verdict == REMAPPED  # another spelling, the same copy
    assert asked == ["platform-git/repository/declarations"]
    assert evidence.placements.place(W.ECR_IMAGE) is evidence.placements.place(W.ECR_IMAGE)
    assert normalize(" https://h/x.git/ ") == "https://h/x"


def test_placements_say_where_and_how(plan):
    placements = Placements(plan)
    by_location, by_rule = placements.place(W.ECR_IMAGE), placements.place(W.VAULT)
    assert placements.how(by_location) == "location ecr-us" and placements.how(by_rule).startswith("rule ")
    assert placements.path("train-eu1") == "aws/prod/eu-west-1/train-eu1" and placements.path(None) is None
    assert placements.how(placements.place(W.UNPLACED)) is None


# -- essentials -----------------------------------------------------------------------------------
def _essentials(plan, failed, needs_key=True):
    items = essentials(plan, Placements(plan), needs_key)
    return items, judge_essentials(items, scenario(plan.domains, failed).lost)


def test_essentials_are_judged_without_remaps(plan):
    items, judged = _essentials(plan, ["train-eu1"])
    assert [(i.role, v) for i, v in judged.verdicts] == [(TARGET, OK), (CREDENTIALS, OK), (KEY, OK), (DR_IMAGE, BLOCKED)]
    assert judged.surviving_targets == ["dr-us"] and judged.reachable("dr-us")
    assert [i.reference for i in judged.blocked(DR_IMAGE)] == [W.DR_IMAGE_IN_CLUSTER]
    assert [i.role for i in _essentials(plan, [], needs_key=False)[0]] == [TARGET, CREDENTIALS, DR_IMAGE]


def test_a_target_is_unreachable_when_it_or_its_credentials_are_lost(tmp_path):
    plan = _plan(tmp_path, targets=[{"name": "dr-us", "url": str(tmp_path / "repo"), "domain": "us-east-1",
                                     "credentials_location": W.CREDS_IN_CLUSTER},
                                    {"name": "dr-eu", "url": str(tmp_path / "eu"), "domain": "eu-west-1"}],
                 encryption={"recipients": [W.RECIPIENT], "key_location": W.KEY_IN_CLUSTER})
    _, judged = _essentials(plan, ["train-eu1"])
    assert judged.surviving_targets == ["dr-us", "dr-eu"]
    assert not judged.reachable("dr-us") and judged.reachable("dr-eu")
    assert [i.owner for i in judged.blocked(CREDENTIALS)] == ["dr-us"] and judged.blocked(CREDENTIALS, "dr-eu") == []
    assert [i.reference for i in judged.blocked(KEY)] == [W.KEY_IN_CLUSTER]
    _, judged = _essentials(plan, ["eu-west-1"])
    assert judged.lost_targets == {"dr-eu"} and not judged.reachable("dr-eu")


def test_undeclared_essentials_are_unknown(tmp_path):
    plan = _plan(tmp_path, dr_image=None, encryption={"recipients": [W.RECIPIENT]},
                 targets=[{"name": "s3", "url": "s3://dr-bucket/repo", "domain": "us-east-1"}])
    _, judged = _essentials(plan, ["train-eu1"])
    assert [(i.role, i.reference, v) for i, v in judged.verdicts] == [
        (TARGET, "s3://dr-bucket/repo", OK), (CREDENTIALS, "", UNKNOWN), (KEY, "", UNKNOWN), (DR_IMAGE, "", UNKNOWN)]
    assert judged.reachable("s3")  # unknown is not lost


# -- end to end: the audit and a restore plan judge with the engine --------------------------------
# The planted platform, and a copy of the in-cluster Vault that the snapshot holds: the restore
# plan judges the Vault as a need of the kubernetes step (a git remote is a git step's origin,
# judged as its destination instead), the audit as a dependency.
WITH_VAULT_COPY = {**W.PLANTED, "platform-k8s": W.PLANTED["platform-k8s"] + [
    ("secrets", "vault/vault-snapshot", [], {"provides": [W.VAULT]})]}


def _both(repo, snapshot, plan, failed):
    """{reference: (audit verdict, restore plan verdict)} for every dependency, and both results."""
    scenarios = scenarios_for(plan, failed)
    target = choose_audited_target(plan, scenarios)
    report = run_audit(plan, repo, target, scenarios)
    artifacts = list(read_catalog(repo, snapshot.catalog))
    restore = plan_restore(plan, snapshot, artifacts, target, failed=failed,
                           blob_exists=lambda d: repo.store.exists(layout.blob_key(d)))
    planned = {n.reference: n.verdict for s in restore.steps for n in s.needs if n.kind != "destination"}
    (result,) = report.scenarios
    return {j.use.reference: (j.verdict, planned.get(j.use.reference)) for j in result.judged}, result, restore


@pytest.fixture
def planted(tmp_path):
    repo = W.open_repo(str(tmp_path / "repo"))
    return tmp_path, repo, W.backup(repo, WITH_VAULT_COPY)


def test_audit_and_restore_agree_on_the_planted_platform(planted):
    root, repo, snapshot = planted
    verdicts, result, restore = _both(repo, snapshot, _plan(root), ["train-eu1"])
    assert verdicts[W.IN_CLUSTER_IMAGE] == (BLOCKED, BLOCKED)
    assert verdicts[W.CHART_REPO] == (BLOCKED, BLOCKED)
    assert verdicts[W.VAULT] == (REMAPPED, REMAPPED)
    assert verdicts[W.ECR_IMAGE] == (OK, OK)
    assert verdicts[W.UNPLACED] == (UNKNOWN, UNKNOWN)
    assert verdicts[W.GITEA_BUNDLED][0] == REMAPPED and verdicts[W.GITEA_UNCOPIED][0] == BLOCKED
    assert result.essentials.copies_survive and restore.preconditions == []


def test_audit_and_restore_agree_when_the_credentials_are_lost_with_the_cluster(planted):
    root, repo, snapshot = planted
    plan = _plan(root, targets=[{"name": "dr-us", "url": str(root / "repo"), "domain": "us-east-1",
                                 "credentials_location": W.CREDS_IN_CLUSTER}])
    verdicts, result, restore = _both(repo, snapshot, plan, ["train-eu1"])
    assert verdicts[W.VAULT] == (BLOCKED, BLOCKED)  # the copy is behind the lost credentials
    assert verdicts[W.GITEA_BUNDLED][0] == BLOCKED
    assert not result.essentials.copies_survive
    assert [(n.kind, n.reference, n.verdict) for n in restore.preconditions] == [
        ("credentials", W.CREDS_IN_CLUSTER, BLOCKED)]


def test_audit_and_restore_agree_when_the_copy_is_missing_blobs(planted):
    root, repo, snapshot = planted
    copy = next(a for a in read_catalog(repo, snapshot.catalog) if a.identity == "vault/vault-snapshot")
    for digest in copy.chunks:
        os.remove(os.path.join(str(root / "repo"), layout.blob_key(digest)))
    verdicts, result, restore = _both(repo, snapshot, _plan(root), ["train-eu1"])
    assert verdicts[W.VAULT] == (BLOCKED, BLOCKED)
    (judged,) = [j for j in result.judged if j.use.reference == W.VAULT]
    (need,) = [n for s in restore.steps for n in s.needs if n.reference == W.VAULT]
    assert "vault/vault-snapshot is missing blobs" in judged.note and "missing blobs" in need.reason


def test_audit_and_restore_agree_on_the_clean_platform(tmp_path):
    repo = W.open_repo(str(tmp_path / "repo"))
    snapshot = W.backup(repo, W.CLEAN)
    plan = _plan(tmp_path, sources=W.CLEAN_SOURCES)
    verdicts, _, _ = _both(repo, snapshot, plan, ["eu-west-1"])
    assert verdicts[W.ECR_IMAGE] == (OK, OK) and verdicts[W.GITHUB_REMOTE][0] == OK and len(verdicts) == 2
