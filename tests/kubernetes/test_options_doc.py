"""docs/exporters/kubernetes.md documents every option of the kubernetes exporter, with its real default."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from dr.exporters.kubernetes.options import KubernetesOptions

DOC = Path(__file__).resolve().parents[2] / "docs" / "exporters" / "kubernetes.md"


def _rows() -> dict[str, str]:
    rows = re.findall(r"^\| `(\w+)` \| (.*?) \| .+ \|$", DOC.read_text(), re.M)
    return dict(rows)


def _default(field) -> object:
    value = field.default_factory() if field.default_factory is not None else field.default
    return value.model_dump() if hasattr(value, "model_dump") else value  # a nested options model


def test_every_option_is_documented_with_its_default():
    rows = _rows()
    for name, field in KubernetesOptions.model_fields.items():
        assert name in rows, f"option {name} is not in {DOC.name}"
        written = rows[name].strip("`")
        default = _default(field)
        if default is None:
            assert written == "none", name
        else:
            assert yaml.safe_load(written) == default, f"{name}: documented {written!r}, code {default!r}"


def test_no_documented_option_is_unknown_and_the_example_plan_source_validates():
    assert set(_rows()) <= set(KubernetesOptions.model_fields)
    [example] = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)
    [source] = yaml.safe_load(example)["sources"]
    common = {"name", "type", "schedule", "rpo", "targets", "sensitivity"}
    KubernetesOptions(**{k: v for k, v in source.items() if k not in common})
    assert any("exporters.md" in line for line in DOC.read_text().splitlines())
    assert "exporters/kubernetes.md" in (DOC.parent.parent / "exporters.md").read_text()
