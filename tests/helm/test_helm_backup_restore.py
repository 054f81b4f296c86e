"""The helm exporter against real chart sources: an HTTP chart repository indexed by `helm repo
index` and a distribution registry holding a chart `helm push`ed; restores read back by helm."""

from __future__ import annotations

import hashlib
import json
import tarfile

import requests
import yaml

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.contract import ExportContext, OutcomeStatus, RestoreRequest
from dr.drills.comparing import difference
from dr.exporters.helm import HelmExporter
from dr.exporters.helm.options import HelmOptions
from tests.helm.charts import ChartServer, helm
from tests.helm.conftest import backup, plan_with, source_result


def _listed(charts) -> dict:
    return {"charts": [{"repo": charts.http.url, "name": "web", "version": "1.0.0"},
                       {"oci": charts.oci_api, "version": "0.1.0"}]}


def test_listed_charts_are_stored_checked_against_their_digests_with_provenance(tmp_path, charts):
    result, found, reader = backup(plan_with(tmp_path, _listed(charts)))
    assert source_result(result).ok and not source_result(result).findings
    web = found[f"{charts.http.url}/web:1.0.0"]
    api = found[f"{charts.oci_api}:0.1.0"]
    assert reader.read(web) == (charts.packaged / "web-1.0.0.tgz").read_bytes()
    assert reader.read(api) == (charts.packaged / "api-0.1.0.tgz").read_bytes()
    assert web.meta["digest"] == charts.sha("web-1.0.0.tgz") and api.meta["digest"] == charts.sha("api-0.1.0.tgz")
    with open(f"{charts.http.folder}/web-1.0.0.tgz.prov", "rb") as prov:
        assert web.meta["provenance"].encode() == prov.read()
    assert "provenance" not in api.meta  # helm push of an unsigned chart has no provenance layer
    assert web.meta["provides"] == [web.identity]

    again, _, _ = backup(plan_with(tmp_path, _listed(charts)))  # unchanged: nothing read again
    assert again.snapshot.stats["artifacts_reused"] == again.snapshot.stats["artifacts"]


def test_restore_into_a_directory_that_helm_reads_as_a_chart_repository(tmp_path, charts, capsys):
    plan = plan_with(tmp_path, _listed(charts))
    backup(plan)
    out = tmp_path / "restored"
    capsys.readouterr()
    assert main(["restore", "--plan", str(tmp_path / "plan.yaml"), "--source", "charts", "--to", str(out),
                 "--json"]) == Exit.OK
    outcomes = {o["item"]: o for o in json.loads(capsys.readouterr().out)["outcomes"]}
    assert {o["status"] for o in outcomes.values()} == {"restored"}
    assert "helm upgrade --install" in outcomes[f"{charts.http.url}/web:1.0.0"]["reason"]
    assert (out / "web-1.0.0.tgz").read_bytes() == (charts.packaged / "web-1.0.0.tgz").read_bytes()
    assert (out / "web-1.0.0.tgz.prov").exists()
    index = yaml.safe_load((out / "index.yaml").read_text())
    assert sorted(index["entries"]) == ["api", "web"]

    server = ChartServer(out)  # the restored directory, served as a chart repository
    try:
        pulled = tmp_path / "pulled"
        pulled.mkdir()
        helm("pull", "web", "--repo", server.url, "--version", "1.0.0", "-d", str(pulled), home=charts.home)
        assert (pulled / "web-1.0.0.tgz").read_bytes() == (charts.packaged / "web-1.0.0.tgz").read_bytes()
        shown = yaml.safe_load(helm("show", "chart", "api", "--repo", server.url, "--version", "0.1.0",
                                    home=charts.home))
        assert (shown["name"], shown["version"]) == ("api", "0.1.0")
    finally:
        server.stop()


def test_restore_into_an_oci_registry_that_helm_pulls_from(tmp_path, charts, capsys):
    plan = plan_with(tmp_path, _listed(charts))
    backup(plan)
    to = f"oci://{charts.dest.host}/restored"
    capsys.readouterr()
    assert main(["restore", "--plan", str(tmp_path / "plan.yaml"), "--source", "charts", "--to", to,
                 "--json"]) == Exit.OK
    assert {o["status"] for o in json.loads(capsys.readouterr().out)["outcomes"]} == {"restored"}
    shown = yaml.safe_load(helm("show", "chart", f"{to}/web", "--version", "1.0.0", "--plain-http",
                                home=charts.home))
    assert (shown["name"], shown["version"]) == ("web", "1.0.0")
    pulled = tmp_path / "pulled"
    pulled.mkdir()
    helm("pull", f"{to}/api", "--version", "0.1.0", "--plain-http", "-d", str(pulled), home=charts.home)
    assert (pulled / "api-0.1.0.tgz").read_bytes() == (charts.packaged / "api-0.1.0.tgz").read_bytes()
    # the provenance travelled as Helm's provenance layer
    manifest = requests.get(f"{charts.dest.url}/v2/restored/web/manifests/1.0.0", timeout=10,
                            headers={"Accept": "application/vnd.oci.image.manifest.v1+json"}).json()
    assert [layer["mediaType"] for layer in manifest["layers"]] == [
        "application/vnd.cncf.helm.chart.content.v1.tar+gzip", "application/vnd.cncf.helm.chart.provenance.v1.prov"]

    capsys.readouterr()  # a second restore changes nothing
    assert main(["restore", "--plan", str(tmp_path / "plan.yaml"), "--source", "charts", "--to", to,
                 "--json"]) == Exit.OK
    assert {o["status"] for o in json.loads(capsys.readouterr().out)["outcomes"]} == {"unchanged"}


def test_restore_and_verify_refuse_a_stored_chart_that_does_not_match_its_digest(tmp_path, charts):
    plan = plan_with(tmp_path, _listed(charts))
    _, found, reader = backup(plan)
    web = found[f"{charts.http.url}/web:1.0.0"]
    # what a catalog whose recorded source digest no longer matches the bytes looks like
    web.meta = {**web.meta, "digest": "sha256:" + hashlib.sha256(b"another chart").hexdigest()}
    exporter = HelmExporter(ExportContext("charts", HelmOptions(), str(tmp_path)))
    [report] = exporter.verify_copies([web], reader, read_data=True)
    assert not report.ok and "refused" in report.problems[0]
    [outcome] = exporter.restore([web], reader, RestoreRequest(to=str(tmp_path / "out")))
    assert outcome.status == OutcomeStatus.FAILED and outcome.reason == report.problems[0]
    assert not (tmp_path / "out" / "web-1.0.0.tgz").exists()


def test_a_whole_plan_restore_without_a_chart_repository_remap_names_the_to_to_give(tmp_path, charts, capsys):
    backup(plan_with(tmp_path, _listed(charts)))
    capsys.readouterr()
    main(["restore", "--plan", str(tmp_path / "plan.yaml"), "--dry-run", "--json"])
    [step] = json.loads(capsys.readouterr().out)["steps"]
    assert step["status"] == "refused" and not (tmp_path / "restored").exists()
    assert f"no chart-repository remap in the plan for {charts.http.url}, oci://{charts.oci.host}/charts:" in step["reason"]
    assert "--to charts=DIR or --to charts=oci://HOST/PATH" in step["reason"]


def test_a_drill_restores_the_charts_into_a_chart_directory_under_its_scratch_folder(tmp_path, charts, capsys):
    backup(plan_with(tmp_path, _listed(charts)))
    scratch = tmp_path / "scratch"
    capsys.readouterr()
    code = main(["drill", "--plan", str(tmp_path / "plan.yaml"), "--failed", "cluster-a", "--to", str(scratch),
                 "--json"])
    captured = capsys.readouterr()
    assert code == Exit.OK, captured.out + captured.err
    index = yaml.safe_load((scratch / "charts" / "index.yaml").read_text())
    assert sorted(index["entries"]) == ["api", "web"]
    assert (scratch / "charts" / "web-1.0.0.tgz").read_bytes() == (charts.packaged / "web-1.0.0.tgz").read_bytes()


class _Serving:
    """The repository's reader, but one artifact's stored bytes are `data` (a hostile or
    damaged repository whose catalog digest agrees with what it holds)."""

    def __init__(self, reader, identity: str, data: bytes) -> None:
        self.reader, self.identity, self.data = reader, identity, data

    def read(self, artifact):
        return self.data if artifact.identity == self.identity else self.reader.read(artifact)


def test_a_chart_that_is_not_a_chart_is_refused_before_anything_is_written(tmp_path, charts):
    plan = plan_with(tmp_path, _listed(charts))
    _, found, reader = backup(plan)
    web, api = found[f"{charts.http.url}/web:1.0.0"], found[f"{charts.oci_api}:0.1.0"]
    junk = b"\x1f\x8b not a gzip stream"
    web.meta = {**web.meta, "digest": "sha256:" + hashlib.sha256(junk).hexdigest()}
    exporter = HelmExporter(ExportContext("charts", HelmOptions(), str(tmp_path)))
    out = tmp_path / "out"
    outcomes = {o.item: o for o in exporter.restore([web, api], _Serving(reader, web.identity, junk),
                                                    RestoreRequest(to=str(out)))}
    assert outcomes[web.identity].status == OutcomeStatus.FAILED and "not a readable chart" in \
        outcomes[web.identity].reason
    assert outcomes[api.identity].status == OutcomeStatus.RESTORED  # each chart is its own unit
    assert sorted(p.name for p in out.iterdir()) == ["api-0.1.0.tgz", "index.yaml"]  # no web, no .prov
    assert sorted(yaml.safe_load((out / "index.yaml").read_text())["entries"]) == ["api"]


def _compared(exporter, artifacts, reader, to: str) -> dict:
    """What dr drill finds of each chart at `to`: "" or what differs from the backup."""
    by_identity = {a.identity: a for a in artifacts}
    return {c.item: difference(c, by_identity[c.item], reader)
            for c in exporter.restored_content(artifacts, reader, RestoreRequest(to=to))}


def test_restored_content_compares_the_charts_in_a_directory_with_the_backup(tmp_path, charts):
    _, found, reader = backup(plan_with(tmp_path, _listed(charts)))
    artifacts = list(found.values())
    exporter = HelmExporter(ExportContext("charts", HelmOptions(), str(tmp_path)))
    out = tmp_path / "out"
    assert set(_compared(exporter, artifacts, reader, str(out)).values()) == {"nothing of it is at the destination"}
    assert {o.status for o in exporter.restore(artifacts, reader, RestoreRequest(to=str(out)))} == {
        OutcomeStatus.RESTORED}
    web, api = f"{charts.http.url}/web:1.0.0", f"{charts.oci_api}:0.1.0"
    assert _compared(exporter, artifacts, reader, str(out)) == {web: "", api: ""}

    (out / "web-1.0.0.tgz").write_bytes((charts.packaged / "web-1.1.0.tgz").read_bytes())  # another chart
    (out / "web-1.0.0.tgz.prov").unlink()
    (out / "api-0.1.0.tgz").write_bytes((out / "api-0.1.0.tgz").read_bytes() + b"\0")
    compared = _compared(exporter, artifacts, reader, str(out))
    assert "fingerprint" in compared[web] and "fingerprint" in compared[api]
    exporter.restore(artifacts, reader, RestoreRequest(to=str(out), overwrite=True))
    (out / "index.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "entries": {}}))  # the index lost them
    assert all(_compared(exporter, artifacts, reader, str(out)).values())


def test_restored_content_reads_the_charts_back_from_an_oci_registry(tmp_path, charts):
    _, found, reader = backup(plan_with(tmp_path, _listed(charts)))
    artifacts = list(found.values())
    exporter = HelmExporter(ExportContext("charts", HelmOptions(), str(tmp_path)))
    to = f"oci://{charts.dest.host}/compared"
    web, api = f"{charts.http.url}/web:1.0.0", f"{charts.oci_api}:0.1.0"
    assert _compared(exporter, artifacts, reader, to)[web] == "nothing of it is at the destination"
    assert {o.status for o in exporter.restore(artifacts, reader, RestoreRequest(to=to))} == {OutcomeStatus.RESTORED}
    assert _compared(exporter, artifacts, reader, to) == {web: "", api: ""}
    # the tag moved to another chart (web 1.1.0's bytes, pushed by helm under 1.0.0's name)
    other = tmp_path / "other"
    other.mkdir()
    helm("pull", "web", "--repo", charts.http.url, "--version", "1.1.0", "-d", str(other), home=charts.home)
    with tarfile.open(other / "web-1.1.0.tgz") as tar:
        tar.extractall(other, filter="data")
    chart_yaml = other / "web" / "Chart.yaml"
    chart_yaml.write_text(chart_yaml.read_text().replace("version: 1.1.0", "version: 1.0.0"))
    (other / "web" / "values.yaml").write_text("replicaCount: 7\n")
    helm("package", str(other / "web"), "-d", str(other / "pkg"), home=charts.home)
    helm("push", str(other / "pkg" / "web-1.0.0.tgz"), f"{to}", "--plain-http", home=charts.home)
    compared = _compared(exporter, artifacts, reader, to)
    assert compared[api] == "" and "fingerprint" in compared[web]


def test_a_drill_compares_every_chart_with_the_backup(tmp_path, charts, capsys):
    backup(plan_with(tmp_path, _listed(charts)))
    capsys.readouterr()
    code = main(["drill", "--plan", str(tmp_path / "plan.yaml"), "--failed", "cluster-a", "--to",
                 str(tmp_path / "scratch"), "--json"])
    captured = capsys.readouterr()
    assert code == Exit.OK, captured.out + captured.err
    [check] = json.loads(captured.out)["verify"]["steps"]
    assert check["verified"] and check["compared"] == 2 and not check["mismatches"], check
    assert check["reason"].startswith("all 2 items identical to the backup"), check["reason"]
