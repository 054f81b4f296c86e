"""A Helm chart for dr itself: the rendered objects, with what a chart user sets as values.

The templates are the same objects `--format yaml` writes, with sentinels put where a value
goes (dr.deploy.helm_values lists them: the image, the namespace (the release's), each CronJob's
schedule, deadline, resources and extra arguments, pod placement, the service account's
annotations, the credentials Secret's name (an existing Secret: credentials never go in values),
the metrics flags, the manifest cache's claim, extra egress), then the sentinels replaced by
Helm expressions. tests/deploy evaluates exactly the expressions written here, so the chart is
checked to render the same objects as `--format yaml` with its default values.
"""

from __future__ import annotations

import copy
import re
from importlib import resources

import yaml

from dr import __version__
from dr.deploy import helm_values
from dr.deploy.objects import CACHE_SIZE_LIMIT, PLAN_CONFIGMAP, Doc
from dr.deploy.rendering import Rendering
from dr.deploy.writing import _comments, dump, header

IMAGE, NAMESPACE, SECRET_NAME, STARTING = "@@image@@", "@@namespace@@", "@@secret@@", "@@starting@@"
PLAN, POD, CACHE, SA_ANNOTATIONS, EXTRA_EGRESS = "@@plan@@", "@@pod@@", "@@cache@@", "@@sa-annotations@@", \
    "@@extra-egress@@"
_WHOLE_LINE = re.compile(r"^(?P<indent> *)(?P<item>- )?(?P<key>[\w.-]+: )?'@@(?P<name>(?:resources|metrics):"
                         r"[a-z0-9-]+|plan|pod|cache|sa-annotations|extra-egress)@@'$", re.M)
_INLINE = {IMAGE: "{{ .Values.image | quote }}", NAMESPACE: "{{ .Release.Namespace }}",
           SECRET_NAME: "{{ .Values.existingSecret }}", STARTING: "{{ .Values.startingDeadlineSeconds }}"}
_PER_CRONJOB = re.compile(r"'?@@(schedule|deadline):([a-z0-9-]+)@@'?")
_PER_CRONJOB_VALUE = {"schedule": '{{ index .Values.schedules "%s" | quote }}',
                      "deadline": '{{ index .Values.activeDeadlineSeconds "%s" }}'}
_PLACEMENT = ("nodeSelector", "tolerations", "affinity", "imagePullSecrets")  # every pod's, from values


def chart(rendering: Rendering, plan_name: str) -> dict[str, str]:
    files = {"Chart.yaml": dump({"apiVersion": "v2", "name": "dr", "description": "dr backups of the plan "
                                 f"{plan_name}, rendered by dr deploy render", "type": "application",
                                 "version": __version__, "appVersion": __version__}),
             "values.yaml": helm_values.values_yaml(rendering),
             "values.schema.json": helm_values.schema(rendering),
             "files/plan.yaml": rendering.plan_text,
             "templates/NOTES.txt": header(rendering, plan_name).replace("# ", "").replace("#\n", "\n")}
    for index, doc in enumerate(rendering.docs):
        name = f"templates/{index:02d}-{doc.obj['kind'].lower()}-{doc.obj['metadata']['name']}.yaml"
        files[name] = _comments(doc.comments) + _template(_with_sentinels(doc, rendering))
    files["templates/prometheusrule.yaml"] = prometheus_rule()
    return files


def _with_sentinels(doc: Doc, rendering: Rendering) -> dict:
    obj = copy.deepcopy(doc.obj)
    if obj["metadata"].get("namespace") == rendering.namespace:
        obj["metadata"]["namespace"] = NAMESPACE
    for subject in obj.get("subjects", []):
        subject["namespace"] = NAMESPACE
    if obj["kind"] == "ServiceAccount":
        obj["metadata"]["annotations"] = SA_ANNOTATIONS
    if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == PLAN_CONFIGMAP:
        obj["data"]["plan.yaml"] = PLAN
    if obj["kind"] == "NetworkPolicy":
        obj["spec"]["egress"].append(EXTRA_EGRESS)
    if obj["kind"] == "CronJob":
        _cronjob_sentinels(obj, rendering)
    return obj


def _cronjob_sentinels(obj: dict, rendering: Rendering) -> None:
    name = obj["metadata"]["name"]
    obj["spec"]["schedule"], obj["spec"]["startingDeadlineSeconds"] = f"@@schedule:{name}@@", STARTING
    job = obj["spec"]["jobTemplate"]["spec"]
    job["activeDeadlineSeconds"] = f"@@deadline:{name}@@"
    pod = job["template"]["spec"]
    pod["placement"] = POD
    container = pod["containers"][0]
    container["image"], container["resources"] = IMAGE, f"@@resources:{name}@@"
    command = container["command"]
    if rendering.pushgateway:  # --pushgateway at render: the metrics value's default
        del command[-2:]
    command.append(f"@@metrics:{name}@@")
    for env in container["env"]:
        if env["name"] == "DR_IMAGE":
            env["value"] = IMAGE
        if "valueFrom" in env:
            env["valueFrom"]["secretKeyRef"]["name"] = SECRET_NAME
    for index, volume in enumerate(pod["volumes"]):
        if "secret" in volume:
            volume["secret"]["secretName"] = SECRET_NAME
        if volume["name"] == "cache":
            pod["volumes"][index] = CACHE


def _template(obj: dict) -> str:
    text = _WHOLE_LINE.sub(_block, dump(obj))
    for sentinel, expression in _INLINE.items():  # YAML quotes a scalar starting with @
        text = text.replace(f"'{sentinel}'", expression).replace(sentinel, expression)
    return _PER_CRONJOB.sub(lambda m: _PER_CRONJOB_VALUE[m[1]] % m[2], text)


def _block(match: re.Match) -> str:
    indent, name = match["indent"], match["name"]
    kind, _, cronjob = name.partition(":")
    if kind == "resources":
        values = '(index .Values.resources "%s")' % cronjob
        return f"{indent}{match['key'].rstrip()}\n{indent}  {_to_yaml(values, indent + '  ')}"
    if kind == "plan":
        return f"{indent}{match['key']}|\n{indent}  {{{{- .Files.Get \"files/plan.yaml\" | nindent {len(indent) + 2} }}}}"
    if kind == "metrics":
        return "\n".join(_flag(indent, "--metrics-file", "file") + _flag(indent, "--pushgateway", "pushgateway") + [
            f'{indent}{{{{- with (index .Values.extraArgs "{cronjob}") }}}}', f"{indent}{_to_yaml('.', indent)}",
            f"{indent}{{{{- end }}}}"])
    if kind == "cache":
        return "\n".join([f"{indent}- name: cache", f"{indent}{{{{- with .Values.cache.existingClaim }}}}",
                          f"{indent}  persistentVolumeClaim:", f"{indent}    claimName: {{{{ . | quote }}}}",
                          f"{indent}{{{{- else }}}}", f"{indent}  emptyDir:", f"{indent}    sizeLimit: {CACHE_SIZE_LIMIT}",
                          f"{indent}{{{{- end }}}}"])
    if kind == "extra-egress":
        return _with(indent, ".Values.networkPolicy.extraEgress", None)
    if kind == "sa-annotations":
        return _with(indent, ".Values.serviceAccount.annotations", "annotations")
    return "\n".join(_with(indent, f".Values.{key}", key) for key in _PLACEMENT)


def _to_yaml(what: str, indent: str) -> str:
    return f"{{{{- toYaml {what} | nindent {len(indent)} }}}}"


def _with(indent: str, value: str, key: str | None) -> str:
    """The value as YAML under `key` (or as list items where it stands), only when it is set."""
    body = [f"{indent}{key}:", f"{indent}  {_to_yaml('.', indent + '  ')}"] if key else [f"{indent}{_to_yaml('.', indent)}"]
    return "\n".join([f"{indent}{{{{- with {value} }}}}", *body, f"{indent}{{{{- end }}}}"])


def _flag(indent: str, flag: str, value: str) -> list[str]:
    return [f"{indent}{{{{- with .Values.metrics.{value} }}}}", f"{indent}- {flag}", f"{indent}- {{{{ . | quote }}}}",
            f"{indent}{{{{- end }}}}"]


def prometheus_rule() -> str:
    """The alert rules as a template: rendered only when the cluster serves the Prometheus
    Operator's PrometheusRule (a chart must install without it), with the values' labels. Every
    `{{` of the rules' own Prometheus templates is written as Helm's literal `{{ "{{" }}`."""
    text = resources.files("dr.deploy").joinpath("prometheus-rules.yaml").read_text(encoding="utf-8")
    rule = yaml.safe_load(text)
    rule["metadata"]["labels"] = {k: v for k, v in rule["metadata"]["labels"].items()
                                  if k not in helm_values.PROMETHEUS_RULE_LABELS}
    rule["metadata"]["namespace"] = NAMESPACE
    body = dump(rule).replace("{{", '{{ "{{" }}').replace(f"'{NAMESPACE}'", _INLINE[NAMESPACE])
    body = body.replace("    app.kubernetes.io/component: alerts\n", "    app.kubernetes.io/component: alerts\n"
                        "    {{- with .Values.prometheusRule.labels }}\n    {{- toYaml . | nindent 4 }}\n"
                        "    {{- end }}\n", 1)
    return ("{{- if and .Values.prometheusRule.enabled (.Capabilities.APIVersions.Has "
            '"monitoring.coreos.com/v1/PrometheusRule") }}\n' + body + "{{- end }}\n")
