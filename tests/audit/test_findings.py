"""The audit flags every dependency planted in the failed domain, and nothing independent of it."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest

from dr.audit import UnknownDomain, scenarios_for
from dr.audit.findings import BLOCKER, INFO, WARNING
from dr.audit.gathering import gather
from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.model.recovery import normalize
from dr.repository import layout
from tests.audit import worlds
from tests.audit.conftest import flagged

CLUSTER_BLOCKERS = {
    ("image-in-failed-domain", worlds.IN_CLUSTER_IMAGE),
    ("registry-in-failed-domain", worlds.CHART_REPO),
    ("secret-store-in-failed-domain", worlds.VAULT),
    ("dependency-in-failed-domain", worlds.GITEA_UNCOPIED),
    ("dr-image-in-failed-domain", worlds.DR_IMAGE_IN_CLUSTER),
}
INDEPENDENT = {worlds.ECR_IMAGE, worlds.GITHUB_REMOTE, worlds.DR_IMAGE_ECR, worlds.KEY_ESCROW,
               worlds.CREDS_SURVIVING}


def by_severity(report, scenario, severity):
    return {(f.code, f.reference) for f in report.findings
            if f.scenario == scenario and f.severity == severity}


def test_cluster_loss_flags_every_planted_dependency(planted):
    report = planted.audit(failed=["train-eu1"])
    assert report.blocked
    assert by_severity(report, "train-eu1", BLOCKER) == CLUSTER_BLOCKERS
    # The checkpoint bucket is in the region, not the cluster: a cluster loss leaves it.
    assert ("dependency-in-failed-domain", worlds.CKPT_BUCKET) not in flagged(report)


def test_region_loss_also_loses_what_is_nested_and_the_regional_bucket(planted):
    report = planted.audit(failed=["eu-west-1"])
    assert by_severity(report, "eu-west-1", BLOCKER) == CLUSTER_BLOCKERS | {
        ("dependency-in-failed-domain", worlds.CKPT_BUCKET)}
    scenario = report.scenarios[0].scenario
    assert scenario.lost == {"eu-west-1", "train-eu1"}


def test_default_scenarios_are_the_protected_domains_each_alone(planted):
    report = planted.audit()
    assert [r.name for r in report.scenarios] == ["train-eu1", "eu-west-1"]
    assert by_severity(report, "train-eu1", BLOCKER) == CLUSTER_BLOCKERS
    assert ("dependency-in-failed-domain", worlds.CKPT_BUCKET) in by_severity(report, "eu-west-1", BLOCKER)


def test_independent_dependencies_are_not_flagged(planted):
    report = planted.audit(plan=planted.plan(dr_image=worlds.DR_IMAGE_ECR), failed=["eu-west-1"])
    assert not {ref for _, ref in flagged(report)} & INDEPENDENT
    verdicts = {j.use.reference: j.verdict for j in report.scenarios[0].judged}
    assert verdicts[worlds.ECR_IMAGE] == "ok"
    assert verdicts[worlds.GITHUB_REMOTE] == "ok"


def test_git_remote_bundled_in_the_snapshot_is_remapped_not_blocked(planted):
    report = planted.audit(failed=["train-eu1"])
    remaps = [f for f in report.findings if f.code == "dependency-remapped"]
    assert [(f.severity, f.reference) for f in remaps] == [(INFO, worlds.GITEA_BUNDLED)]
    assert "platform-git/repository/declarations" in remaps[0].message
    assert report.scenarios[0].counts["remapped"] == 1


def test_remap_needs_every_blob_of_the_copy(planted):
    from dr.repository.catalogs import read_catalog

    provider = next(a for a in read_catalog(planted.repo, planted.snapshot.catalog)
                    if a.identity == "declarations")
    for digest in provider.chunks:
        os.remove(os.path.join(planted.repo_path, layout.blob_key(digest)))
    report = planted.audit(failed=["train-eu1"])
    blocker = next(f for f in report.findings if f.reference == worlds.GITEA_BUNDLED)
    assert (blocker.code, blocker.severity) == ("dependency-in-failed-domain", BLOCKER)
    assert "missing blobs" in blocker.message


def test_credentials_only_in_the_failed_cluster_block_and_void_the_remap(planted):
    plan = planted.plan(targets=[{"name": "dr-us", "url": planted.repo_path, "domain": "us-east-1",
                                  "credentials_location": worlds.CREDS_IN_CLUSTER}])
    report = planted.audit(plan=plan, failed=["train-eu1"])
    creds = [f for f in report.findings if f.code == "credentials-in-failed-domain"]
    assert [(f.severity, f.reference, f.domain) for f in creds] == [
        (BLOCKER, worlds.CREDS_IN_CLUSTER, "train-eu1")]
    assert report.scenarios[0].essentials.copies_survive is False
    # Nobody can read the snapshot, so its copy of the Git remote does not count any more.
    assert ("dependency-in-failed-domain", worlds.GITEA_BUNDLED) in flagged(report)


def test_credentials_of_a_second_surviving_target_are_a_warning(planted):
    targets = [{"name": "dr-us", "url": planted.repo_path, "domain": "us-east-1",
                "credentials_location": worlds.CREDS_SURVIVING},
               {"name": "dr-us-2", "url": planted.repo_path + "-2", "domain": "us-east-1",
                "credentials_location": worlds.CREDS_IN_CLUSTER}]
    report = planted.audit(plan=planted.plan(targets=targets), failed=["train-eu1"])
    creds = [f for f in report.findings if f.code == "credentials-in-failed-domain"]
    assert [(f.severity, f.kind) for f in creds] == [(WARNING, "credentials")]
    assert ("dependency-remapped", worlds.GITEA_BUNDLED) in flagged(report)


def test_key_kept_only_in_the_failed_cluster_is_a_blocker(planted):
    plan = planted.plan(encryption={"recipients": [worlds.RECIPIENT], "key_location": worlds.KEY_IN_CLUSTER})
    report = planted.audit(plan=plan, failed=["train-eu1"])
    assert ("key-in-failed-domain", worlds.KEY_IN_CLUSTER) in by_severity(report, "train-eu1", BLOCKER)


def test_no_surviving_target_when_the_whole_account_fails(planted):
    report = planted.audit(failed=["prod"])
    codes = {f.code for f in report.findings if f.severity == BLOCKER}
    assert "no-surviving-target" in codes
    assert report.scenarios[0].essentials.surviving_targets == []
    assert report.scenarios[0].essentials.copies_survive is False


def test_audited_target_lost_but_another_survives(planted):
    targets = [{"name": "dr-eu", "url": planted.repo_path, "domain": "eu-west-1"},
               {"name": "dr-us", "url": planted.repo_path + "-us", "domain": "us-east-1"}]
    report = planted.audit(plan=planted.plan(targets=targets), failed=["eu-west-1"], target="dr-eu")
    finding = next(f for f in report.findings if f.code == "target-in-failed-domain")
    assert finding.severity == BLOCKER and "--target dr-us" in finding.message


def test_unknown_location_is_a_warning_and_a_blocker_under_strict(planted):
    plan = planted.plan(dr_image=worlds.DR_IMAGE_ECR)
    relaxed = planted.audit(plan=plan, failed=["serve-us1"])
    unknown = [f for f in relaxed.findings if f.code == "unknown-location"]
    assert [(f.severity, f.reference, f.scenario) for f in unknown] == [(WARNING, worlds.UNPLACED, None)]
    assert not relaxed.blocked
    strict = planted.audit(plan=plan, failed=["serve-us1"], strict=True)
    assert [(f.severity, f.reference) for f in strict.findings if f.code == "unknown-location"] == [
        (BLOCKER, worlds.UNPLACED)]
    assert strict.blocked


def test_undeclared_essentials_are_unknown_locations(planted):
    plan = planted.plan(dr_image=None, encryption={"recipients": [worlds.RECIPIENT]})
    report = planted.audit(plan=plan, failed=["serve-us1"])
    kinds = {f.kind for f in report.findings if f.code == "unknown-location"}
    assert {"key", "dr-image"} <= kinds


def test_staleness_against_each_sources_rpo(planted):
    plan = planted.plan(sources=worlds.plan_data("x")["sources"] + [
        {"name": "never-backed-up", "type": "files", "rpo": "1h"}])
    fresh = planted.audit(plan=plan, failed=["serve-us1"], now=planted.snapshot.time + timedelta(minutes=30))
    assert [(f.severity, f.reference) for f in fresh.findings if f.code == "stale-backup"] == [
        (BLOCKER, "never-backed-up")]
    later = planted.audit(plan=plan, failed=["serve-us1"], now=planted.snapshot.time + timedelta(hours=2))
    stale = {(f.severity, f.reference) for f in later.findings if f.code == "stale-backup"}
    # rpo 1h: stale after 2h; the checkpoints source has rpo 6h: still fresh.
    assert stale == {(BLOCKER, "never-backed-up"), (WARNING, "platform-k8s"), (WARNING, "platform-helm"),
                     (WARNING, "platform-git")}
    assert all(f.scenario is None for f in later.findings if f.code == "stale-backup")


def test_a_source_that_failed_in_the_snapshot_is_not_held_by_it(world):
    from dr.repository.writing import SnapshotWriter

    writer = SnapshotWriter(world.repo, [], workers=1)
    failed = writer.source("platform-k8s", "kubernetes").discard("apiserver unreachable")
    snapshot = writer.finish("ml-platform", [failed])
    writer.close()
    report = world.audit(failed=["serve-us1"], now=snapshot.time)
    assert (BLOCKER, "platform-k8s") in {(f.severity, f.reference) for f in report.findings
                                         if f.code == "stale-backup"}


def test_an_empty_repository_reports_every_source_as_having_no_backup(world):
    report = world.audit(failed=["train-eu1"])
    assert report.snapshot is None
    assert {f.reference for f in report.findings if f.code == "stale-backup"} == {
        "platform-k8s", "platform-helm", "platform-git", "checkpoints"}
    assert report.blocked


def test_unknown_failed_domain_names_the_nearest(world):
    with pytest.raises(UnknownDomain) as info:
        scenarios_for(world.plan(), ["eu-west1"])
    assert "did you mean 'eu-west-1'" in str(info.value)


def test_explicit_domains_fail_together_in_one_scenario(world):
    [scenario] = scenarios_for(world.plan(), ["train-eu1", "serve-us1"])
    assert scenario.lost == {"train-eu1", "serve-us1"}
    assert scenario.label == "train-eu1 (cluster) and serve-us1 (cluster) fail"


def test_gathering_counts_repeats_once_per_distinct_reference():
    def artifact(i, refs, provides=None):
        return Artifact("src", "k8s", "deployment", f"d{i}", 1, Sensitivity.INTERNAL,
                        dependencies=[Dependency("image", r) for r in refs],
                        meta={"provides": provides} if provides else {})

    artifacts = [artifact(i, ["a:1", "b:1"]) for i in range(10)] + [artifact(99, [], provides="https://h/x.git/")]
    index = gather(a.to_json() for a in artifacts)  # the catalog lines, as the audit reads them
    assert (index.artifacts, index.references, len(index.uses)) == (11, 20, 2)
    use = index.uses[("image", "a:1")]
    assert use.count == 10 and len(use.examples) == 5 and use.sources == {"src"}
    assert index.providers("https://h/x") and normalize(" https://h/x.git/ ") == "https://h/x"


def test_in_snapshot_references_are_ok_when_the_snapshot_provides_them(world):
    """The kubernetes exporter's form: objects depend on `secret:<ns>/<name>`, secrets artifacts provide it."""
    world.backup({"platform-k8s": [
        ("kubernetes-objects", "deployments.apps/training",
         [worlds.dep("secret", "secret:training/registry-token"), worlds.dep("configmap", "configmap:training/gone")]),
        ("kubernetes-objects", "secrets/training", [], {"provides": ["secret:training/registry-token"]}),
    ]})
    report = world.audit(failed=["train-eu1"])
    verdicts = {j.use.reference: j.verdict for j in report.scenarios[0].judged}
    assert verdicts == {"secret:training/registry-token": "ok", "configmap:training/gone": "unknown"}
    assert [(f.code, f.reference) for f in report.findings if f.kind in ("secret", "configmap")] == [
        ("unknown-location", "configmap:training/gone")]


def test_provides_matches_the_redacted_form_exporters_record(world):
    url = "https://ci:token123@gitea.apps.train-eu1.example.com/platform/models.git"
    world.backup({"platform-git": [("repository", "models", [worlds.dep("git-remote", url)],
                                    {"provides": ["https://***@gitea.apps.train-eu1.example.com/platform/models"]})]})
    report = world.audit(failed=["train-eu1"])
    assert [f.code for f in report.findings if "gitea" in f.reference] == ["dependency-remapped"]
    assert all("token123" not in f.reference + f.message for f in report.findings)


def test_drs_own_image_run_by_a_workload_is_one_problem_not_two(world):
    """dr's backup CronJob runs dr's image: the snapshot records it as an image dependency, and
    the plan names it as dr_image. One blocker per scenario, naming the CronJob too."""
    contents = dict(worlds.PLANTED)
    contents["platform-k8s"] = contents["platform-k8s"] + [
        ("cronjob", "dr-system/dr-backup", [worlds.dep("image", worlds.DR_IMAGE_IN_CLUSTER, "spec.jobTemplate...image")])]
    world.backup(contents)
    report = world.audit(failed=["train-eu1"])
    mine = [f for f in report.findings if f.reference == worlds.DR_IMAGE_IN_CLUSTER]
    assert [(f.code, f.scenario) for f in mine] == [("dr-image-in-failed-domain", "train-eu1")]
    assert "platform-k8s/cronjob/dr-system/dr-backup" in mine[0].examples
    assert mine[0].artifacts_affected == 1 and mine[0].sources == ["platform-k8s"]
    others = {f.reference for f in report.findings if f.code == "image-in-failed-domain"}
    assert worlds.IN_CLUSTER_IMAGE in others  # other images are still their own findings
