"""The images exporter backs up against real registries: which images, what lands in the DR
registries, what the catalog records, and what an unchanged second run costs."""

from __future__ import annotations

import pytest

from dr.model.plan_loading import PlanError
from dr.exporters.images.references import backup_tag, cosign_tags
from dr.model.recovery import copies_of, normalize
from tests.images.conftest import auth_file, backup, plan_with, source_result
from tests.harness.registries import RegistryProxy


def test_images_the_other_sources_need_and_the_plan_lists_are_copied_to_every_dr_registry(
        tmp_path, registries, images):
    dr, dr_auth = registries.dr, registries.dr_auth
    plan = plan_with(tmp_path, {"to": [f"{dr.url}/mirror", dr_auth.url], "images": [images.multi],
                                "auth_file": auth_file(tmp_path, registries)},
                     pods={"api": [images.api], "worker": [images.worker, images.api]})
    result, records, _ = backup(plan)
    assert source_result(result).ok and not source_result(result).findings
    assert sorted(records) == sorted([images.api, images.worker, images.multi])

    artifact, record = records[images.api]
    host = registries.source.host.replace(":", "-")
    mirrored = f"{dr.host}/mirror/{host}/team/api"
    assert record["digest"] == images.api_digest and record["tag"] == "1.0"
    assert [c["reference"] for c in record["copies"]] == [f"{mirrored}:1.0", f"{dr_auth.host}/{host}/team/api:1.0"]
    # the original tag, the immutable backup tag and the cosign signature tag are all there
    tags = dr.client().tags(f"mirror/{host}/team/api")
    assert {"1.0", backup_tag(images.api_digest), cosign_tags(images.api_digest)[0]} <= set(tags)
    assert record["attached"] == [{"tag": cosign_tags(images.api_digest)[0], "digest": images.signature,
                                   "via": "cosign-tag"}]
    # the audit's view: the artifact provides the reference the pods recorded, and says where
    assert copies_of([artifact])[normalize(images.api)]
    assert artifact.meta["provides_at"][images.api] == f"{mirrored}@{images.api_digest}"
    assert [d.kind for d in artifact.dependencies] == ["registry", "registry"]
    assert artifact.meta["resolved_at"] and artifact.meta["digest"] == images.api_digest

    _, multi = records[images.multi]
    assert multi["platforms"] == ["linux/amd64", "linux/arm64"] and len(multi["manifests"]) == 3
    # the shared base layers crossed once per DR registry (mounted or found, never copied twice)
    assert result.snapshot.stats["bytes_transferred"] < 2 * (
        sum(sum(r["blobs"].values()) for _, r in records.values()) - images.base_bytes) + 50_000


def test_an_unchanged_second_backup_costs_one_head_per_image_at_the_dr_registry(tmp_path, registries, images):
    front = RegistryProxy(registries.dr.host)  # counts what the DR registry is asked
    try:
        plan = plan_with(tmp_path, {"to": [f"http://{front.host}/unchanged"], "signatures": False},
                         pods={"api": [images.api], "worker": [images.worker], "multi": [images.multi]})
        first, records, _ = backup(plan)
        assert len(records) == 3 and source_result(first).ok
        front.seen.clear()
        second, again, _ = backup(plan)
        assert front.seen == {"GET": 1, "HEAD": 3}  # GET /v2/ once, then one HEAD per image
        assert second.snapshot.stats["artifacts_reused"] >= 3
        assert second.snapshot.stats.get("bytes_transferred", 0) == 0
        assert {k: r for k, (_, r) in again.items()} == {k: r for k, (_, r) in records.items()}
        # the size a restore's RTO estimate needs survives the run that did not read the image
        assert {k: a.meta["bytes"] for k, (a, _) in again.items()} == \
            {k: sum(r["blobs"].values()) for k, (_, r) in records.items()}
        assert all(a.meta["bytes"] > 0 for a, _ in again.values())
    finally:
        front.close()


def test_an_unchanged_second_backup_asks_the_source_only_for_what_it_has(tmp_path, registries, images):
    back = RegistryProxy(registries.source.host)  # counts what the source registry is asked
    try:
        refs = [r.replace(registries.source.host, back.host) for r in (images.api, images.worker)]
        plan = plan_with(tmp_path, {"to": [f"{registries.dr.url}/asked"], "images": refs, "from_plan": False,
                                    "parallel_images": 1})  # one at a time: the count is exact
        first, records, _ = backup(plan)
        assert source_result(first).ok and len(records) == 2
        assert [a["tag"] for a in records[refs[0]][1]["attached"]] == [cosign_tags(images.api_digest)[0]]
        back.seen.clear()
        second, _, _ = backup(plan)
        assert source_result(second).ok
        # per image its tag's HEAD and its repository's tag list (no HEAD per cosign tag it lacks);
        # the one signature's HEAD; the referrers API asked once (distribution 2.8 has none)
        assert back.seen == {"HEAD": 3, "GET": 3}
    finally:
        back.close()


def test_repository_patterns_and_a_platform_filter(tmp_path, registries, images):
    source = registries.source.host
    plan = plan_with(tmp_path, {"to": [f"{registries.dr.url}/filtered"], "repositories": [f"{source}/team/mul*"],
                                "platforms": ["linux/arm64"]})
    result, records, _ = backup(plan)
    assert list(records) == [images.multi] and source_result(result).ok
    _, record = records[images.multi]
    assert record["platforms"] == ["linux/arm64"] and len(record["manifests"]) == 2
    assert record["copies"][0]["dr_digest"] != record["digest"]  # our own, filtered index
    # unchanged second run: still one HEAD, against the filtered index's digest
    second, again, _ = backup(plan)
    assert second.snapshot.stats["artifacts_reused"] >= 1 and again[images.multi][1] == record


def test_bearer_token_auth_at_the_source(tmp_path, registries, images, proxy):
    proxy.bearer = ("puller", "pull-pw")
    import base64
    import json
    token = base64.b64encode(b"puller:pull-pw").decode()
    (tmp_path / "auth.json").write_text(json.dumps({"auths": {proxy.host: {"auth": token}}}))
    api = images.api.replace(registries.source.host, proxy.host)
    plan = plan_with(tmp_path, {"to": [f"{registries.dr.url}/bearer"], "images": [api], "auth_file": "auth.json"})
    result, records, _ = backup(plan)
    assert source_result(result).ok and list(records) == [api]
    assert proxy.tokens  # the realm handed out tokens and they were used


def test_a_registry_named_by_its_in_cluster_host_is_reached_at_the_plans_endpoint(tmp_path, registries, images):
    """Pods name `registry.kube-system.svc.cluster.local:5000/...`, which resolves only inside the
    cluster; dr reaches it through `endpoints` (a port-forward here), and everything the audit and a
    restore read keeps the name the pods use."""
    in_cluster = "registry.kube-system.svc.cluster.local:5000"
    ref = images.api.replace(registries.source.host, in_cluster)
    plan = plan_with(tmp_path, {"to": [f"{registries.dr.url}/endpoints"], "signatures": False,
                                "endpoints": {in_cluster: f"http://{registries.source.host}"}},
                     pods={"api": [ref]})
    result, records, _ = backup(plan)
    assert source_result(result).ok, source_result(result).findings
    artifact, record = records[ref]
    assert record["digest"] == images.api_digest and artifact.meta["provides"][0] == ref
    path = f"endpoints/{in_cluster.replace(':', '-')}/team/api"
    assert registries.dr.client().head_manifest(path, "1.0")[0] == images.api_digest
    assert artifact.meta["provides_at"][ref] == f"{registries.dr.host}/{path}@{images.api_digest}"


def test_an_endpoint_with_a_path_or_a_bad_host_is_a_plan_error(tmp_path, registries):
    for endpoints, said in (({"reg.local:5000": "http://127.0.0.1:1/v2"}, "with no path"),
                            ({"reg.local/team": "http://127.0.0.1:1"}, "registry host")):
        with pytest.raises(PlanError, match=said):
            plan_with(tmp_path, {"to": [registries.dr.url], "endpoints": endpoints})
