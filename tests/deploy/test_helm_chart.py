"""`--format helm`: a chart whose templates, rendered with its default values, are the objects
`--format yaml` writes, and whose values change what they say they change.

The real helm (v4, .tools/bin/helm from scripts/install-test-deps) renders the chart with
`helm template`, with default values and with overrides. `expand` below also evaluates exactly
the Go-template forms dr writes (and fails on any other: Helm's whitespace trimming, `quote`,
`index`, `toYaml`, `nindent`, `.Files.Get`, `with` and its `else`), which pins the forms dr may
write."""

from __future__ import annotations

import json
import os
import re
import subprocess

import yaml

from tests.deploy.conftest import MULTI_REGION, by_kind, container, documents, render
from tests.plans.conftest import REPO_ROOT

HELM = os.path.join(REPO_ROOT, ".tools", "bin", "helm")
PROMETHEUS_RULE = "templates/prometheusrule.yaml"  # not in the yaml stream: only with the Operator's CRD

_WITH = re.compile(r'\{\{- with (\.Values\.[\w.]+|\(index \.Values\.\w+ "[\w-]+"\)) \}\}(.*?)'
                   r"(?:\{\{- else \}\}(.*?))?\{\{- end \}\}", re.S)
_EXPR = re.compile(r"(\s*)\{\{(-?) (.*?) \}\}")


def _value(values: dict, dotted: str):
    for part in dotted.split("."):
        values = values[part]
    return values


def _evaluate(expr: str, values: dict, files: dict, namespace: str, dot=None, raw: bool = False):
    pipeline = [p.strip() for p in expr.split("|")]
    head, filters = pipeline[0], pipeline[1:]
    if head == ".":
        value = dot
    elif head == ".Release.Namespace":
        value = namespace
    elif head.startswith(".Values."):
        value = _value(values, head[len(".Values."):])
    elif head == "toYaml .":
        value = yaml.safe_dump(dot, sort_keys=True).rstrip("\n")
    elif m := re.fullmatch(r'index \.Values\.(\w+) "([\w-]+)"', head):
        value = values[m[1]][m[2]]
    elif m := re.fullmatch(r'\.Files\.Get "([\w/.-]+)"', head):
        value = files[m[1]]
    elif m := re.fullmatch(r'toYaml \(index \.Values\.(\w+) "([\w-]+)"\)', head):
        value = yaml.safe_dump(values[m[1]][m[2]], sort_keys=True).rstrip("\n")
    else:
        raise AssertionError(f"a template form dr does not write: {expr}")
    if raw:  # what `with` tests: the value itself
        return value
    for name in filters:
        if name == "quote":
            value = json.dumps(str(value))
        elif m := re.fullmatch(r"nindent (\d+)", name):
            value = "\n" + "\n".join(" " * int(m[1]) + line if line else line for line in str(value).split("\n"))
        else:
            raise AssertionError(f"a template filter dr does not write: {name}")
    return str(value)


def expand(text: str, values: dict, files: dict, namespace: str) -> str:
    def with_block(match: re.Match) -> str:
        dot = _evaluate(match[1].strip("()"), values, files, namespace, raw=True)
        return _expressions(match[2], values, files, namespace, dot) if dot else (match[3] or "")
    return _expressions(_WITH.sub(with_block, text), values, files, namespace)


def _expressions(text: str, values, files, namespace, dot=None) -> str:
    def one(match: re.Match) -> str:
        space = "" if match[2] == "-" else match[1]  # {{- trims the whitespace before it
        return space + _evaluate(match[3], values, files, namespace, dot)
    return _EXPR.sub(one, text)


def _chart(tmp_path, capsys) -> tuple[str, dict[str, str]]:
    out = tmp_path / "chart"
    code, _, err = render(["--plan", MULTI_REGION, "--format", "helm", "--out", str(out)], capsys)
    assert code == 0, err
    files = {}
    for folder, _, names in os.walk(out):
        for name in names:
            path = os.path.join(folder, name)
            files[os.path.relpath(path, out)] = open(path, encoding="utf-8").read()
    return str(out), files


def _objects(files: dict[str, str], values: dict, namespace: str) -> list[dict]:
    templates = sorted(n for n in files if n.startswith("templates/") and n.endswith(".yaml") and n != PROMETHEUS_RULE)
    return [yaml.safe_load(expand(files[n], values, files, namespace)) for n in templates]


def test_the_chart_renders_the_yaml_formats_objects(tmp_path, capsys):
    _, files = _chart(tmp_path, capsys)
    chart = yaml.safe_load(files["Chart.yaml"])
    assert chart["apiVersion"] == "v2" and chart["name"] == "dr"
    values = yaml.safe_load(files["values.yaml"])
    assert set(values) == {"image", "imagePullSecrets", "serviceAccount", "schedules", "resources",
                           "startingDeadlineSeconds", "activeDeadlineSeconds", "extraArgs", "nodeSelector",
                           "tolerations", "affinity", "existingSecret", "metrics", "cache", "networkPolicy",
                           "prometheusRule"}
    assert values["prometheusRule"]["labels"] == {"release": "kube-prometheus-stack"}
    _, out, _ = render(["--plan", MULTI_REGION], capsys)
    assert _objects(files, values, "dr-system") == documents(out)


def test_the_values_change_what_they_say(tmp_path, capsys):
    _, files = _chart(tmp_path, capsys)
    values = yaml.safe_load(files["values.yaml"])
    values["image"] = "mirror.example.com/dr:9"
    values["schedules"]["dr-backup-platform-config"] = "5 * * * *"
    values["resources"]["dr-backup-platform-config"]["limits"]["memory"] = "1Gi"
    values["existingSecret"] = "vault-synced-dr"
    values["metrics"]["pushgateway"] = "http://pushgateway.monitoring.svc:9091"
    values["serviceAccount"]["annotations"] = {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/dr"}
    values["nodeSelector"] = {"pool": "system"}
    values["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    values["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}}
    values["imagePullSecrets"] = [{"name": "mirror-pull"}]
    values["startingDeadlineSeconds"] = 120
    values["activeDeadlineSeconds"]["dr-verify-dr-near"] = 36000
    values["extraArgs"]["dr-status-dr-near"] = ["--read-data"]
    values["cache"]["existingClaim"] = "dr-manifest-cache"
    values["networkPolicy"]["extraEgress"] = [{"ports": [{"protocol": "TCP", "port": 9091}]}]
    objects = _objects(files, values, "backups")
    cronjobs = {c["metadata"]["name"]: c for c in by_kind(objects, "CronJob")}
    config = cronjobs["dr-backup-platform-config"]
    assert config["spec"]["schedule"] == "5 * * * *" and config["metadata"]["namespace"] == "backups"
    pod = container(config)
    assert pod["image"] == "mirror.example.com/dr:9" and pod["resources"]["limits"]["memory"] == "1Gi"
    assert {"name": "DR_IMAGE", "value": "mirror.example.com/dr:9"} in pod["env"]  # what shard pods run
    assert pod["command"][-3:] == ["--quiet", "--pushgateway", "http://pushgateway.monitoring.svc:9091"]
    assert "--metrics-file" not in pod["command"]
    refs = [e["valueFrom"]["secretKeyRef"]["name"] for e in pod["env"] if "valueFrom" in e]
    assert refs and set(refs) == {"vault-synced-dr"}
    assert by_kind(objects, "ConfigMap")[0]["data"]["plan.yaml"] == files["files/plan.yaml"]
    assert by_kind(objects, "ServiceAccount")[0]["metadata"]["annotations"] == values["serviceAccount"]["annotations"]
    assert by_kind(objects, "NetworkPolicy")[0]["spec"]["egress"][-1] == values["networkPolicy"]["extraEgress"][0]
    for cron in cronjobs.values():  # placement and the cache's claim: every pod's
        spec = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert {k: spec[k] for k in ("nodeSelector", "tolerations", "affinity", "imagePullSecrets")} == \
            {k: values[k] for k in ("nodeSelector", "tolerations", "affinity", "imagePullSecrets")}
        assert {"name": "cache", "persistentVolumeClaim": {"claimName": "dr-manifest-cache"}} in spec["volumes"]
        assert cron["spec"]["startingDeadlineSeconds"] == 120
    verify = cronjobs["dr-verify-dr-near"]
    assert verify["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] == 36000
    assert container(verify)["command"][4:8] == ["--target", "dr-near", "--read-data-subset", "auto/7"]
    assert container(cronjobs["dr-status-dr-near"])["command"][-1] == "--read-data"
    assert container(cronjobs["dr-status-dr-remote"])["command"][-1] != "--read-data"


def _helm(*args: str) -> subprocess.CompletedProcess:
    assert os.access(HELM, os.X_OK), f"{HELM} is missing: run scripts/install-test-deps"
    return subprocess.run([HELM, *args], capture_output=True, text=True, timeout=60)


def _helm_template(chart: str, *overrides: str, typed: tuple[str, ...] = ()) -> list[dict]:
    sets = [a for o in overrides for a in ("--set-string", o)] + [a for o in typed for a in ("--set", o)]
    done = _helm("template", "dr", chart, "--namespace", "dr-system", *sets)
    assert done.returncode == 0, done.stderr
    return documents(done.stdout)


def _key(obj: dict) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def test_real_helm_renders_the_same_objects(tmp_path, capsys):
    chart, _ = _chart(tmp_path, capsys)
    _, out, _ = render(["--plan", MULTI_REGION], capsys)
    assert sorted(_helm_template(chart), key=_key) == sorted(documents(out), key=_key)
    changed = _helm_template(chart, "image=mirror.example.com/dr:9", "metrics.file=/tmp/dr.prom",
                             "schedules.dr-backup-training-recipes=*/5 * * * *")
    recipes = next(c for c in by_kind(changed, "CronJob") if c["metadata"]["name"] == "dr-backup-training-recipes")
    assert recipes["spec"]["schedule"] == "*/5 * * * *"
    assert container(recipes)["image"] == "mirror.example.com/dr:9"
    assert container(recipes)["command"][-2:] == ["--metrics-file", "/tmp/dr.prom"]
    placed = _helm_template(chart, "nodeSelector.pool=system", "serviceAccount.annotations.iam\\.gke\\.io/"
                            "gcp-service-account=dr@p.iam.gserviceaccount.com", "cache.existingClaim=dr-cache",
                            typed=("activeDeadlineSeconds.dr-prune-dr-near=9000",))
    prune = next(c for c in by_kind(placed, "CronJob") if c["metadata"]["name"] == "dr-prune-dr-near")
    spec = prune["spec"]["jobTemplate"]["spec"]
    assert spec["activeDeadlineSeconds"] == 9000 and spec["template"]["spec"]["nodeSelector"] == {"pool": "system"}
    assert {"name": "cache", "persistentVolumeClaim": {"claimName": "dr-cache"}} in spec["template"]["spec"]["volumes"]
    assert by_kind(placed, "ServiceAccount")[0]["metadata"]["annotations"] == {
        "iam.gke.io/gcp-service-account": "dr@p.iam.gserviceaccount.com"}


def test_helm_lint_passes_and_the_schema_refuses_a_wrong_value(tmp_path, capsys):
    chart, files = _chart(tmp_path, capsys)
    schema = json.loads(files["values.schema.json"])
    assert schema["additionalProperties"] is False
    assert schema["properties"]["activeDeadlineSeconds"]["additionalProperties"] == {"type": "integer"}
    done = _helm("lint", chart, "--strict")
    assert done.returncode == 0, done.stdout + done.stderr
    for wrong in ("activeDeadlineSeconds.dr-prune-dr-near=soon", "tolerations=none", "nodeSelecter.pool=a"):
        done = _helm("template", "dr", chart, "--set-string" if "soon" in wrong or "none" in wrong else "--set", wrong)
        assert done.returncode != 0 and "schema" in done.stderr.lower(), (wrong, done.stderr)


def test_the_prometheus_rule_is_rendered_with_the_operators_crd_and_the_values_labels(tmp_path, capsys):
    chart, _ = _chart(tmp_path, capsys)
    with open(os.path.join(REPO_ROOT, "deploy", "prometheus-rules.yaml"), encoding="utf-8") as handle:
        shipped = yaml.safe_load(handle)
    rendered = _helm("template", "dr", chart, "--namespace", "monitoring", "--api-versions",
                     "monitoring.coreos.com/v1/PrometheusRule", "--set", "prometheusRule.labels.team=ml")
    assert rendered.returncode == 0, rendered.stderr
    rule, = by_kind(documents(rendered.stdout), "PrometheusRule")
    assert rule["spec"] == shipped["spec"]  # the Prometheus templates ({{ $labels.source }}) came through whole
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack" and rule["metadata"]["labels"]["team"] == "ml"
    assert rule["metadata"]["namespace"] == "monitoring"
    off = _helm("template", "dr", chart, "--api-versions", "monitoring.coreos.com/v1/PrometheusRule",
                "--set", "prometheusRule.enabled=false")
    assert off.returncode == 0 and not by_kind(documents(off.stdout), "PrometheusRule")
