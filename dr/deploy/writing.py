"""Writing a rendering: one YAML stream, or a Helm chart directory; either whole or not at all.

YAML is dumped with the keys in the order the objects were built (Kubernetes' own order:
apiVersion, kind, metadata, spec) and block scalars for multi-line strings (the plan stays
readable in its ConfigMap). The chart's templates are the same objects with the values a chart
user sets (image, namespace, schedules, resources, the Secret's name, optional metrics flags)
put back as Helm expressions.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import yaml

from dr.deploy.objects import SECRET
from dr.deploy.rendering import Rendering

HEADER = ("# Rendered by `dr deploy render` from the plan {plan}: do not edit by hand, render again.\n"
          "# The Secret `{secret}` is not rendered (credentials never are): create it with these keys\n"
          "# (docs/deploy.md):\n")


class _Dumper(yaml.SafeDumper):
    pass


def _text(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump(obj: dict) -> str:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True)


def _comments(lines: list[str]) -> str:
    return "".join(f"# {line}\n" if line else "#\n" for line in lines)


def header(rendering: Rendering, plan_name: str) -> str:
    keys = [f"  {k['key']}: {k['what']}" + (" (optional)" if k["optional"] else "") for k in rendering.secret_keys]
    extra = [f"Left out (no schedule): {', '.join(rendering.left_out)}"] if rendering.left_out else []
    extra += [f"Note: {n}" for n in rendering.notes]
    extra += [f"PersistentVolumeClaim {c['name']} (you provide it) is mounted read-only at {c['mount']}"
              for c in rendering.claims]
    return HEADER.format(plan=plan_name, secret=SECRET) + _comments(keys or ["  (none: no source needs one)"]) + \
        _comments(extra)


def yaml_stream(rendering: Rendering, plan_name: str) -> str:
    parts = [header(rendering, plan_name)]
    for doc in rendering.docs:
        parts.append("---\n" + _comments(doc.comments) + dump(doc.obj))
    return "".join(parts)


def write_file(path: str, text: str) -> None:
    """Write aside, then rename: an interrupted render leaves the old file, never half a new one."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".dr-render-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_chart(path: str, files: dict[str, str]) -> None:
    """The chart's files into a folder beside `path`, then renamed to it (replacing an old chart)."""
    parent = os.path.dirname(os.path.abspath(path)) or "."
    staging = tempfile.mkdtemp(prefix=".dr-chart-", dir=parent)
    try:
        for name, text in sorted(files.items()):
            target = os.path.join(staging, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(text)
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.replace(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise

