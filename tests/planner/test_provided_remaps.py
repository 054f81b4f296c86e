"""meta['provides_at']: a dependent step hears the copy's place through its own exporter's
declared remap kind; a plan remap of the same reference wins; a step whose exporter declares no
kind for the dependency hears nothing (dr.planner.destinations, exporter-agnostic)."""

from __future__ import annotations

from types import SimpleNamespace

from dr.contract import ExportContext
from dr.contract.capabilities import complete
from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.model.plans import RemapSpec
from dr.planner.destinations import provided_at, request_remap
from dr.planner.steps import Step
from tests.plugins.acme_inventory import InventoryExporter
from tests.plugins.acme_pods import PodsExporter

IMAGE = "registry.cluster-a.local/team/api:1.0"
COPY = "dr.example.net/mirror/registry.cluster-a.local/team/api@sha256:" + "a" * 64


def _artifact(source: str, exporter: str, deps=(), meta=None) -> Artifact:
    return Artifact(source, exporter, "x", source, 1, Sensitivity.INTERNAL, dependencies=list(deps), meta=meta or {})


def _plan(remaps=()):
    return SimpleNamespace(spec=SimpleNamespace(restore=SimpleNamespace(remaps=list(remaps))))


def _step(name: str, cls, artifacts) -> Step:
    """A step whose exporter is built as the registry loads it (completed with the defaults of
    the capabilities its class lacks)."""
    return Step(name, cls.type_name, artifacts, complete(cls)(ExportContext(name, None, ".")))


ARTIFACTS = [_artifact("images", "images", meta={"provides": [IMAGE], "provides_at": {IMAGE: COPY}}),
             _artifact("pods", "pods", [Dependency("image", IMAGE)])]


def test_a_dependent_step_hears_the_copy_through_its_declared_remap_kind():
    provided = provided_at(ARTIFACTS)
    assert provided == {IMAGE: ("images", COPY)}
    pods = _step("pods", PodsExporter, [ARTIFACTS[1]])
    assert request_remap(_plan(), pods, provided) == {f"image-registry:{IMAGE}": COPY}


def test_a_plan_remap_of_the_reference_wins_and_undeclared_kinds_hear_nothing():
    provided = provided_at(ARTIFACTS)
    pods = _step("pods", PodsExporter, [ARTIFACTS[1]])
    remap = RemapSpec(kind="registry", old="registry.cluster-a.local", new="registry.b.example")
    assert request_remap(_plan([remap]), pods, provided) == {"image-registry:registry.cluster-a.local":
                                                             "registry.b.example"}
    inventory = _step("inventory", InventoryExporter, [_artifact("inventory", "inventory",
                                                                 [Dependency("image", IMAGE)])])
    assert request_remap(_plan(), inventory, provided) == {}
    provider = _step("images", PodsExporter, [_artifact("images", "pods", [Dependency("image", IMAGE)])])
    assert request_remap(_plan(), provider, provided) == {}  # the provider itself is not rewritten
