"""A Helm chart for dr itself: the rendered objects, with what a chart user sets as values.

The templates are the same objects `--format yaml` writes; values replace the image, the
namespace (the release's), each CronJob's schedule, the resources, the credentials Secret's
name (an existing Secret: credentials never go in values), and add optional metrics flags.
tests/deploy evaluates exactly the expressions written here, so the chart is checked to render
the same objects as `--format yaml`.
"""

from __future__ import annotations

import copy
import re

from dr import __version__
from dr.deploy.objects import PLAN_CONFIGMAP, SECRET, Doc
from dr.deploy.rendering import Rendering
from dr.deploy.writing import _comments, dump, header

IMAGE, NAMESPACE, SECRET_NAME = "@@image@@", "@@namespace@@", "@@secret@@"
RESOURCES, PLAN, METRICS = "@@resources:", "@@plan@@", "@@metrics@@"
_SCHEDULE = "@@schedule:{}@@"
_WHOLE_LINE = re.compile(r"^(?P<indent> *)(?P<item>- )?(?P<key>[\w.-]+: )?'(?P<name>@@(?:resources:[a-z0-9-]+|plan|metrics)@@)'$",
                         re.M)
_INLINE = {IMAGE: "{{ .Values.image | quote }}", NAMESPACE: "{{ .Release.Namespace }}",
           SECRET_NAME: "{{ .Values.existingSecret }}"}
_SCHEDULE_INLINE = re.compile(r"'?@@schedule:([a-z0-9-]+)@@'?")


def chart(rendering: Rendering, plan_name: str) -> dict[str, str]:
    files = {"Chart.yaml": dump({"apiVersion": "v2", "name": "dr", "description": "dr backups of the plan "
                                 f"{plan_name}, rendered by dr deploy render", "type": "application",
                                 "version": __version__, "appVersion": __version__}),
             "values.yaml": _values(rendering),
             "files/plan.yaml": rendering.plan_text,
             "templates/NOTES.txt": header(rendering, plan_name).replace("# ", "").replace("#\n", "\n")}
    for index, doc in enumerate(rendering.docs):
        name = f"templates/{index:02d}-{doc.obj['kind'].lower()}-{doc.obj['metadata']['name']}.yaml"
        files[name] = _comments(doc.comments) + _template(_with_sentinels(doc, rendering))
    return files


def _values(rendering: Rendering) -> str:
    resources = {d.obj["metadata"]["name"]: d.obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
                 ["resources"] for d in rendering.docs if d.obj["kind"] == "CronJob"}
    values = {"image": rendering.image,
              "schedules": {g.name: g.schedule for g in rendering.groups},
              "resources": resources,
              "existingSecret": SECRET,
              "metrics": {"file": "", "pushgateway": ""}}
    return _comments([
        "image: dr's image; pull it from a registry that survives what the plan protects against.",
        "schedules: one CronJob per distinct schedule of the plan, by CronJob name.",
        f"resources: {rendering.resources_why}.",
        "existingSecret: the Secret holding the credentials (keys: see templates/NOTES.txt); never values.",
        "metrics: optional; when set, passed to dr backup as --metrics-file / --pushgateway."]) + dump(values)


def _with_sentinels(doc: Doc, rendering: Rendering) -> dict:
    obj = copy.deepcopy(doc.obj)
    if obj["metadata"].get("namespace") == rendering.namespace:
        obj["metadata"]["namespace"] = NAMESPACE
    for subject in obj.get("subjects", []):
        subject["namespace"] = NAMESPACE
    if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == PLAN_CONFIGMAP:
        obj["data"]["plan.yaml"] = PLAN
    if obj["kind"] == "CronJob":
        obj["spec"]["schedule"] = _SCHEDULE.format(obj["metadata"]["name"])
        pod = obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        container = pod["containers"][0]
        container["image"], container["resources"] = IMAGE, RESOURCES + obj["metadata"]["name"] + "@@"
        container["command"].append(METRICS)
        for env in container["env"]:
            if env["name"] == "DR_IMAGE":
                env["value"] = IMAGE
            if "valueFrom" in env:
                env["valueFrom"]["secretKeyRef"]["name"] = SECRET_NAME
        for volume in pod["volumes"]:
            if "secret" in volume:
                volume["secret"]["secretName"] = SECRET_NAME
    return obj


def _template(obj: dict) -> str:
    text = _WHOLE_LINE.sub(_block, dump(obj))
    for sentinel, expression in _INLINE.items():  # YAML quotes a scalar starting with @
        text = text.replace(f"'{sentinel}'", expression).replace(sentinel, expression)
    return _SCHEDULE_INLINE.sub(lambda m: '{{ index .Values.schedules "%s" | quote }}' % m.group(1), text)


def _block(match: re.Match) -> str:
    indent, name = match["indent"], match["name"]
    if name.startswith(RESOURCES):
        cronjob = name[len(RESOURCES):-2]
        return (f"{indent}{match['key'].rstrip()}\n{indent}  {{{{- toYaml (index .Values.resources \"{cronjob}\") | "
                f"nindent {len(indent) + 2} }}}}")
    if name == PLAN:
        return f"{indent}{match['key']}|\n{indent}  {{{{- .Files.Get \"files/plan.yaml\" | nindent {len(indent) + 2} }}}}"
    return (f"{indent}{{{{- with .Values.metrics.file }}}}\n{indent}- --metrics-file\n{indent}- {{{{ . | quote }}}}\n"
            f"{indent}{{{{- end }}}}\n{indent}{{{{- with .Values.metrics.pushgateway }}}}\n{indent}- --pushgateway\n"
            f"{indent}- {{{{ . | quote }}}}\n{indent}{{{{- end }}}}")
