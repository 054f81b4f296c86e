"""Shared pieces for the plan tests: a small valid plan, and helpers to break it precisely."""

from __future__ import annotations

import os

import pytest

from dr.contract.registry import Registry
from dr.model.plan_loading import PlanError, Problem, load_plan
from dr.repository.encryption import generate_identity

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A minimal but complete plan: every section present, every rule satisfied. Tests derive
# malformed plans from it by exact text replacement (see PlanFile.replace), so a line number
# in an assertion is found from the text, not hard-coded.
BASE_PLAN = """\
version: 1
name: test-plan
failure_domains:
  - name: cloud
    kind: provider
    children:
      - name: region-a
        kind: region
        children:
          - name: cluster-a
            kind: cluster
      - name: region-b
        kind: region
locations:
  - name: platform-git
    domain: region-a
    kind: git
    hosts: ["git.example.com"]
placement_rules:
  - match: "*.svc.cluster.local"
    domain: cluster-a
    reason: in-cluster service DNS
protects_against: [cluster-a, region-a]
encryption:
  recipients: [{recipient}]
  key_location: offline-safe
targets:
  - name: dr-site
    url: repository
    domain: region-b
retention:
  keep_last: 3
sources:
  - name: declarations
    type: git
    schedule: "0 * * * *"
    rpo: 1h
    repositories:
      - name: platform
        url: https://git.example.com/platform.git
  - name: config
    type: files
    schedule: "*/15 * * * *"
    rpo: 15m
    paths: [config]
  - name: secrets
    type: files
    sensitivity: secret
    paths: [secrets]
"""

_IDENTITY, _RECIPIENT = generate_identity()


@pytest.fixture(scope="session")
def registry() -> Registry:
    return Registry()


@pytest.fixture(scope="session")
def age_identity() -> str:
    """A private age key generated for this test run (never written into a plan that loads)."""
    return _IDENTITY


@pytest.fixture(scope="session")
def age_recipient() -> str:
    return _RECIPIENT


def base_text() -> str:
    return BASE_PLAN.format(recipient=_RECIPIENT)


class PlanFile:
    """A plan text being edited, written to a file on demand."""

    def __init__(self, directory, text: str | None = None):
        self.directory = directory
        self.text = base_text() if text is None else text
        self.path = str(directory / "plan.yaml")

    def replace(self, old: str, new: str) -> "PlanFile":
        count = self.text.count(old)
        assert count == 1, f"{old!r} occurs {count} times in the plan text; the edit would be ambiguous"
        self.text = self.text.replace(old, new)
        return self

    def line_of(self, needle: str) -> int:
        """The 1-based line of the only line containing `needle`."""
        found = [i + 1 for i, line in enumerate(self.text.splitlines()) if needle in line]
        assert len(found) == 1, f"{needle!r} is on lines {found}; expected exactly one"
        return found[0]

    def write(self) -> str:
        with open(self.path, "w", encoding="utf-8") as handle:
            handle.write(self.text)
        return self.path

    def problems(self, registry: Registry) -> list[Problem]:
        """Every problem load_plan reports; fails the test if the plan loads."""
        self.write()
        with pytest.raises(PlanError) as info:
            load_plan(self.path, registry)
        return info.value.problems


@pytest.fixture
def plan_file(tmp_path) -> PlanFile:
    return PlanFile(tmp_path)
