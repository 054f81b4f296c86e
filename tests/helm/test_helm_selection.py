"""Which charts the plan's dependencies bring in, against the real HTTP chart repository: a
pinned `helm-chart` is that chart; a `helm-chart-repo` naming a whole repository is copied only
when the plan asks (`repositories`), else a warning names it. The dependencies are given as the
contract hands them to the exporter (ExportContext.plan_dependencies); the sink only records."""

from __future__ import annotations

from dr.contract import ExportContext, PlanDependency
from dr.exporters.helm import HelmExporter
from dr.exporters.helm.options import HelmOptions


class RecordingSink:
    source = "charts"

    def __init__(self) -> None:
        self.written: dict[str, dict] = {}

    def write(self, kind, identity, content, **kwargs):
        data = content().read() if callable(content) else content
        self.written[identity] = {"kind": kind, "size": len(data), **kwargs}
        return type("Written", (), {"size": len(data)})()

    def transferred(self, nbytes: int) -> None:
        pass


def _export(charts, deps: list[PlanDependency], **options) -> tuple[dict, list[dict]]:
    context = ExportContext("charts", HelmOptions(**options), ".", plan_dependencies=lambda: deps)
    sink = RecordingSink()
    HelmExporter(context).export(sink)
    return sink.written, context.findings


def test_a_whole_repository_is_copied_only_when_the_plan_asks(charts):
    repo = charts.http.url
    deps = [PlanDependency("helm-chart-repo", repo, ("argo",), ("Application/argocd/web .spec.source.repoURL",)),
            PlanDependency("helm-chart", f"{repo}/api:0.1.0", ("platform",), ("helm release team-b/api v2",))]
    written, findings = _export(charts, deps)
    assert set(written) == {f"{repo}/api:0.1.0"}
    assert written[f"{repo}/api:0.1.0"]["meta"]["releases"] == [{"namespace": "team-b", "name": "api", "revision": 2}]
    [left] = findings
    assert (left["severity"], left["code"], left["repository"]) == ("warning", "chart-repository-not-copied", repo)
    assert "Application/argocd/web" in left["message"] and "repositories" in left["message"]

    written, findings = _export(charts, deps, repositories="latest")  # web 1.0.0 is left out
    assert set(written) == {f"{repo}/web:1.1.0", f"{repo}/api:0.1.0", repo}
    assert "provides" not in written[repo]["meta"]
    assert [(f["code"], f["repository"]) for f in findings] == [("chart-repository-partial", repo)]
    assert "1 older chart version(s) left out" in findings[0]["message"]

    written, findings = _export(charts, deps, repositories="all")
    assert set(written) == {f"{repo}/web:1.0.0", f"{repo}/web:1.1.0", f"{repo}/api:0.1.0", repo}
    assert written[repo]["meta"]["provides"] == [repo] and not findings


def test_what_a_helm_source_needs_in_a_pod(tmp_path):
    options = HelmOptions(auth_file="auth.json", plain_http=["charts.internal:5000"], charts=[
        {"repo": "https://charts.example.com/stable", "name": "web", "version": "1.0.0"},
        {"oci": "oci://charts.internal:5000/team/api", "version": "0.1.0"}])
    needs = HelmExporter(ExportContext("charts", options, str(tmp_path))).run_needs()
    assert needs.endpoints == ["https://charts.example.com/stable", "http://charts.internal:5000"]
    [login] = needs.credentials
    assert login.path == str(tmp_path / "auth.json") and "known only when the backup runs" in needs.notes[0]
