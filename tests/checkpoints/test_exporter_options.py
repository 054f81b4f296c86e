"""The `checkpoints` exporter's plan options: what a plan may say, what it may not (with the
field named), and the run/step naming a plan gets by default."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from dr.exporters.checkpoints import CheckpointsExporter
from dr.exporters.checkpoints.options import DEFAULT_RUN_PATTERN
from dr.contract.registry import Registry
from dr.model.plan_loading import PlanError, parse_plan

Options = CheckpointsExporter.Options


def errors(**options) -> str:
    with pytest.raises(ValidationError) as info:
        Options(**options)
    return str(info.value)


def test_registered_by_entry_point():
    assert issubclass(Registry().get("checkpoints"), CheckpointsExporter)  # completed with the defaults of capabilities it lacks


def test_shorthand_and_full_forms():
    o = Options(roots=["s3://train/runs", {"url": "/mnt/ckpt"}], dr_copy="s3://dr/copies",
                markers=["COMPLETE", {"pattern": "rank_*.done", "count": 8}])
    assert [r.url for r in o.roots] == ["s3://train/runs", "/mnt/ckpt"]
    assert [(m.pattern, m.count) for m in o.markers] == [("COMPLETE", None), ("rank_*.done", 8)]
    assert o.marker_names() == ["COMPLETE"]  # globs cannot name a directory for discovery
    (tier,) = o.effective_tiers()
    assert (tier.name, tier.to.url, tier.keep_last) == ("near", "s3://dr/copies", None)


@pytest.mark.parametrize("options,message", [
    ({"roots": [], "dr_copy": "/dr"}, "at least 1 item"),
    ({"roots": ["/r"]}, "set dr_copy"),
    ({"roots": ["/r"], "tiers": [{"name": "near"}]}, "a tier without `to` copies to dr_copy"),
    ({"roots": ["https://x/y"], "dr_copy": "/dr"}, "only s3://bucket[/prefix] URLs"),
    ({"roots": ["s3://user:pw@b/p"], "dr_copy": "/dr"}, "credentials never go in it"),
    ({"roots": [{"url": "/r", "endpoint_url": "http://x"}], "dr_copy": "/dr"}, "apply to s3:// URLs only"),
    ({"roots": ["/r"], "dr_copy": "/dr", "run_pattern": "(?P<run>.+)/x"}, "(?P<step>...)"),
    ({"roots": ["/r"], "dr_copy": "/dr", "run_pattern": "("}, "not a regular expression"),
    ({"roots": ["/r"], "dr_copy": "/dr", "abort_multipart_after": "soon"}, "a duration such as"),
    ({"roots": ["s3://b/runs"], "dr_copy": "s3://b/runs/dr"}, "overlaps the checkpoint root"),
    ({"roots": ["/r"], "dr_copy": "/dr", "tiers": [{"name": "a"}, {"name": "a"}]}, "unique"),
    ({"roots": ["/r"], "dr_copy": "/dr", "tiers": [{"name": "a", "milestones_only": True}]}, "`milestone` rule"),
    ({"roots": ["/r"], "dr_copy": "/dr", "milestone": {"step_multiple": 10},
      "tiers": [{"name": "a", "milestones_only": True, "keep_last": 3}]}, "never pruned automatically"),
    ({"roots": ["/r"], "dr_copy": "/dr", "milestone": {}}, "step_multiple, marker, or both"),
    ({"roots": ["/r"], "dr_copy": "/dr", "tiers": [{"name": "Near"}]}, "lower-case"),
    ({"roots": ["/r"], "dr_copy": "/dr", "retention": {"keep_last": 1}}, "Extra inputs are not permitted"),
])
def test_refused(options, message):
    assert message in errors(**options)


@pytest.mark.parametrize("path,run,step", [
    ("llama-70b/step-1000", "llama-70b", 1000),
    ("llama-70b/step_1000", "llama-70b", 1000),
    ("team/exp1/checkpoint-500", "team/exp1", 500),  # HF Trainer
    ("run/global_step20", "run", 20),  # DeepSpeed
    ("run/iter_0000200", "run", 200),  # Megatron
    ("run/step-300.pt", "run", 300),  # a single-file checkpoint
])
def test_default_run_pattern(path, run, step):
    match = re.fullmatch(DEFAULT_RUN_PATTERN, path)
    assert match and (match["run"], int(match["step"])) == (run, step)


@pytest.mark.parametrize("path", ["step-100", "run/latest", "run/step-100/model"])
def test_default_run_pattern_refuses(path):
    assert re.fullmatch(DEFAULT_RUN_PATTERN, path) is None


PLAN = """\
version: 1
name: training
failure_domains:
  - {name: region-a, kind: region}
  - {name: region-b, kind: region}
protects_against: [region-a]
targets:
  - {name: repo, url: "s3://dr-repo/plan", domain: region-b}
sources:
  - name: llama
    type: checkpoints
    roots: [{url: "s3://train-a/runs", endpoint_url: "http://127.0.0.1:9"}]
    settle_seconds: 60
    milestone: {step_multiple: 10000}
    tiers:
      - {name: near, to: "s3://dr-near/ckpt", keep_last: 3}
      - {name: archive, to: "s3://dr-archive/ckpt", milestones_only: true}
    %s
"""


def test_plan_loading_validates_the_options():
    plan = parse_plan(PLAN % "abort_multipart_after: 12h", "plan.yaml", Registry())
    assert plan.options["llama"].abort_after_seconds == 12 * 3600
    with pytest.raises(PlanError) as info:
        parse_plan(PLAN % "abort_multipart_after: later", "plan.yaml", Registry())
    assert "abort_multipart_after" in str(info.value)
