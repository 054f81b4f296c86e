"""`dr plan validate` and `dr plan schema` (issue 31): every example plan is valid offline, and
valid against the JSON Schema generated from the plan and exporter option models, checked by a
real JSON Schema validator (Helm's, which validates a chart's values against values.schema.json)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
HELM = os.path.join(ROOT, ".tools", "bin", "helm")
EXAMPLES = sorted(os.path.join(ROOT, "plans", name) for name in os.listdir(os.path.join(ROOT, "plans"))
                  if name.endswith(".yaml"))


def _doc_plans(tmp_path) -> list[str]:
    """The whole plans the docs show (a YAML block with version, targets and sources), as files;
    an elided age recipient ("age1...") is filled in with a real one, nothing else is changed."""
    from dr.repository.encryption import generate_identity

    recipient = generate_identity()[1]
    found = []
    pages = [os.path.join("docs", n) for n in sorted(os.listdir(os.path.join(ROOT, "docs"))) if n.endswith(".md")]
    pages += [os.path.join("docs", "exporters", n) for n in sorted(os.listdir(os.path.join(ROOT, "docs", "exporters")))]
    for doc in ["README.md"] + pages:
        with open(os.path.join(ROOT, doc), encoding="utf-8") as handle:
            blocks = re.findall(r"```yaml\n(.*?)```", handle.read(), flags=re.S)
        for i, block in enumerate(b for b in blocks if re.search(r"^version:", b, re.M)
                                  and re.search(r"^targets:", b, re.M) and re.search(r"^sources:", b, re.M)):
            path = tmp_path / f"{os.path.basename(doc)}-{i}.yaml"
            path.write_text(block.replace('"age1..."', f'"{recipient}"'))
            found.append(str(path))
    return found


@pytest.fixture
def chart(tmp_path, capsys):
    """A chart whose values schema is `dr plan schema`'s: `helm template -f PLAN` validates it."""
    folder = tmp_path / "chart"
    (folder / "templates").mkdir(parents=True)
    (folder / "Chart.yaml").write_text("apiVersion: v2\nname: plan\nversion: 0.1.0\n")
    assert main(["plan", "schema", "--out", str(folder / "values.schema.json")]) == Exit.OK
    capsys.readouterr()
    return str(folder)


def _schema_check(chart: str, plan: str) -> subprocess.CompletedProcess:
    assert os.access(HELM, os.X_OK), f"{HELM} is missing: run scripts/install-test-deps"
    return subprocess.run([HELM, "template", "plan", chart, "-f", plan], capture_output=True, text=True, timeout=60)


def test_the_docs_show_a_whole_plan(tmp_path):
    assert len(_doc_plans(tmp_path)) >= 1 and len(EXAMPLES) >= 2


def test_every_example_plan_meets_the_schema(chart, tmp_path):
    for plan in EXAMPLES + _doc_plans(tmp_path):
        done = _schema_check(chart, plan)
        assert done.returncode == 0, (plan, done.stderr)


def test_the_schema_refuses_an_unknown_option_and_a_wrong_type(chart, tmp_path):
    with open(EXAMPLES[-1], encoding="utf-8") as handle:
        text = handle.read()
    for wrong, said in ((text.replace("    paths:", "    pathz:", 1), "'pathz' not allowed"),
                        (text.replace("version: 1", "version: 2", 1), "/version")):
        (tmp_path / "wrong.yaml").write_text(wrong)
        done = _schema_check(chart, str(tmp_path / "wrong.yaml"))
        assert done.returncode != 0 and said in done.stderr, done.stderr


def test_the_schema_names_every_exporter_and_its_options(chart):
    from dr.contract.registry import Registry

    with open(os.path.join(chart, "values.schema.json"), encoding="utf-8") as handle:
        schema = json.load(handle)
    registry = Registry()
    for name in registry.names():
        source = schema["$defs"][f"source.{name}"]
        assert source["properties"]["type"] == {"const": name}
        assert set(registry.options_model(name).model_fields) <= set(source["properties"])
        assert {"name", "rpo", "schedule", "targets"} <= set(source["properties"])


VALIDATE_OFFLINE = """
import json, sys
from dr.cli.main import main
code = main(["plan", "validate", *sys.argv[1:], "--json"])
touched = sorted(m for m in sys.modules if m.startswith(("dr.repository.stores.s3", "dr.kits.s3", "boto", "requests", "urllib3",
                                                          "kubernetes", "hvac", "mlflow")))
print(json.dumps({"code": code, "touched": touched}))
"""


def test_validate_checks_every_example_plan_offline(tmp_path):
    """No credentials in the environment and no store or network client loaded: CI can lint a
    plan without any."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "VAULT_", "KUBECONFIG", "DR_"))}
    plans = EXAMPLES + _doc_plans(tmp_path)
    done = subprocess.run([sys.executable, "-c", VALIDATE_OFFLINE, *plans], capture_output=True, text=True,
                          timeout=120, env={**env, "HOME": str(tmp_path)}, cwd=ROOT)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    document = json.loads(done.stdout[:done.stdout.rindex("\n{")])
    assert seen == {"code": 0, "touched": []}, done.stderr
    assert document["valid"] is True and [p["file"] for p in document["plans"]] == plans
    assert document["schema_version"] == 1


def test_validate_checks_the_exporters_options(tmp_path, capsys):
    with open(EXAMPLES[-1], encoding="utf-8") as handle:
        (tmp_path / "p.yaml").write_text(handle.read().replace("    paths:", "    pathz:", 1))
    assert main(["plan", "validate", str(tmp_path / "p.yaml"), EXAMPLES[0], "--json"]) == Exit.USAGE
    document = json.loads(capsys.readouterr().out)
    assert [p["valid"] for p in document["plans"]] == [False, True]
    assert any("pathz" in problem and "paths" in problem for problem in document["plans"][0]["problems"])
