"""Malformed plans: each problem is reported exactly (file, field path, line, found, expected),
all problems at once, and never as a traceback.

Tests here once pinned known bugs in dr/model with xfail markers; the bugs are fixed and they
failing - as XPASS - the moment the bug is fixed, which is the signal to drop the marker.
"""

from __future__ import annotations

import difflib
import json
import string
from importlib.metadata import EntryPoint, entry_points

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dr.cli.main import main
from dr.contract.registry import Registry
from dr.model.plan_loading import PlanError, Problem, load_plan
from dr.model.plans import (NAME_HINT, RENAMED_KEYS, SOURCE_COMMON_KEYS, DomainSpec, EncryptionSpec, LocationSpec,
                            PlacementRuleSpec, PlanSpec, RetentionSpec, TargetSpec)

from tests.plans.conftest import PlanFile, base_text

MISSING = "nothing (the field is missing)"
REQUIRED = "field required"
DOMAINS = "a failure domain declared under failure_domains (cloud, cluster-a, region-a, region-b)"
TOP_LEVEL_KEYS = ", ".join(sorted(PlanSpec.model_fields))


def test_the_base_plan_is_valid(plan_file, registry):
    plan_file.write()
    plan = load_plan(plan_file.path, registry)
    assert [s.name for s in plan.spec.sources] == ["declarations", "config", "secrets"]


# -- unknown keys -------------------------------------------------------------------------------
def test_unknown_top_level_key_names_the_nearest(plan_file, registry):
    plan_file.replace("sources:\n", "sourcse:\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "sources", MISSING, REQUIRED, None),
        Problem(plan_file.path, "sourcse", "unknown key 'sourcse'",
                f"did you mean 'sources'? valid keys here: {TOP_LEVEL_KEYS}", plan_file.line_of("sourcse:")),
    ]


def test_unknown_key_in_a_nested_section_names_the_nearest(plan_file, registry):
    plan_file.replace("    domain: region-b\n", "    domain: region-b\n    immutabilty: {mode: governance, days: 1}\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "targets[0].immutabilty", "unknown key 'immutabilty'",
                f"did you mean 'immutability'? valid keys here: {', '.join(sorted(TargetSpec.model_fields))}",
                plan_file.line_of("immutabilty")),
    ]


def test_the_replaced_object_lock_key_names_its_replacement(plan_file, registry):
    plan_file.replace("    domain: region-b\n", "    domain: region-b\n    object_lock: true\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "targets[0].object_lock", "the key 'object_lock', which was replaced",
                RENAMED_KEYS["object_lock"], plan_file.line_of("object_lock")),
    ]
    assert "immutability: {mode: governance|compliance, days: N}" in RENAMED_KEYS["object_lock"]


def test_immutability_needs_an_s3_target_and_a_known_mode(plan_file, registry):
    plan_file.replace("    domain: region-b\n", "    domain: region-b\n    immutability: {mode: legal, days: 0}\n")
    assert [(p.path, p.expected) for p in plan_file.problems(registry)] == [
        ("targets[0].immutability.mode", "input should be 'governance' or 'compliance'"),
        ("targets[0].immutability.days", "input should be greater than or equal to 1")]
    plan_file.replace("immutability: {mode: legal, days: 0}", "immutability: {mode: governance, days: 3}")
    [problem] = plan_file.problems(registry)
    assert problem.path == "targets[0].immutability" and "not an S3 bucket" in problem.found


def test_unknown_key_deep_in_the_domain_tree(plan_file, registry):
    plan_file.replace("            kind: cluster\n", "            knid: cluster\n")
    line = plan_file.line_of("knid")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "failure_domains[0].children[0].children[0].kind", MISSING, REQUIRED, line - 1),
        Problem(plan_file.path, "failure_domains[0].children[0].children[0].knid", "unknown key 'knid'",
                "did you mean 'kind'? valid keys here: children, description, kind, name, region, zone", line),
    ]


def test_unknown_key_in_a_source_goes_through_the_plugin_options(plan_file, registry):
    """`scheduel` is not a git option: the git exporter's model refuses it, and the hint
    includes the keys every source has (schedule among them)."""
    plan_file.replace('    schedule: "0 * * * *"\n', '    scheduel: "0 * * * *"\n')
    (problem,) = plan_file.problems(registry)
    assert (problem.file, problem.path, problem.line, problem.found) == (
        plan_file.path, "sources[0].scheduel", plan_file.line_of("scheduel"), "unknown key 'scheduel'")
    assert problem.expected.startswith("did you mean 'schedule'? valid keys here: ")
    listed = problem.expected.split("valid keys here: ", 1)[1].split(", ")
    assert set(SOURCE_COMMON_KEYS) <= set(listed)


def test_unknown_key_in_a_source_lists_the_plugin_keys_and_common_keys(plan_file, registry):
    plan_file.replace('    schedule: "0 * * * *"\n', '    scheduel: "0 * * * *"\n')
    (problem,) = plan_file.problems(registry)
    options = registry.get("git").Options.model_fields
    valid = ", ".join(sorted(set(options) | set(SOURCE_COMMON_KEYS)))
    assert problem.expected == f"did you mean 'schedule'? valid keys here: {valid}"


def test_misspelt_plugin_option_suggests_the_option(plan_file, registry):
    plan_file.replace("    paths: [config]\n", "    pathz: [config]\n")
    problems = plan_file.problems(registry)
    unknown = [p for p in problems if p.path == "sources[1].pathz"]
    assert unknown and unknown[0].expected.startswith("did you mean 'paths'?")


def test_unknown_key_nested_in_a_plugin_option_lists_its_keys(plan_file, registry):
    plan_file.replace("      - name: platform\n", "      - nmae: platform\n")
    problems = plan_file.problems(registry)
    unknown = [p for p in problems if p.path == "sources[0].repositories[0].nmae"]
    assert unknown and unknown[0].expected == "did you mean 'name'? valid keys here: name, url"


# -- exporter types and options ------------------------------------------------------------------
def test_unknown_exporter_type_names_the_nearest_installed(plan_file, registry):
    plan_file.replace("    type: git\n", "    type: gti\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "sources[0].type", "unknown exporter type 'gti'",
                f"did you mean 'git'? an installed exporter: {', '.join(registry.names())} (see 'dr plugins')",
                plan_file.line_of("type: gti")),
    ]


def test_unknown_exporter_type_with_nothing_close(plan_file, registry):
    plan_file.replace("    type: git\n", "    type: zfs-pool-mirror\n")
    (problem,) = plan_file.problems(registry)
    assert problem.expected == f"an installed exporter: {', '.join(registry.names())} (see 'dr plugins')"


def test_missing_plugin_option(plan_file, registry):
    plan_file.replace("    repositories:\n      - name: platform\n        url: https://git.example.com/platform.git\n",
                      "")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "sources[0].repositories", MISSING, REQUIRED, plan_file.line_of("name: declarations")),
    ]


def test_plugin_option_of_the_wrong_type(plan_file, registry):
    plan_file.replace("    paths: [config]\n", "    paths: config\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "sources[1].paths", "'config'", "input should be a valid list",
                plan_file.line_of("paths: config")),
    ]


# -- values ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("cron", ["61 * * * *", "0 0 * * * *", "every hour", "* * *"])
def test_bad_cron(plan_file, registry, cron):
    plan_file.replace('"0 * * * *"', f'"{cron}"')
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "sources[0].schedule", repr(cron), "a 5-field cron expression such as '0 * * * *'",
                plan_file.line_of(f'"{cron}"')),
    ]


@pytest.mark.parametrize("duration", ["1 hour", "1.5h", "h", "-1h", "1y"])
def test_bad_duration(plan_file, registry, duration):
    plan_file.replace("    rpo: 1h\n", f'    rpo: "{duration}"\n')
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "sources[0].rpo", repr(duration), "a duration such as 90s, 15m, 1h30m, 7d or 2w",
                plan_file.line_of(f'rpo: "{duration}"')),
    ]


def test_duration_written_as_a_number(plan_file, registry):
    plan_file.replace("    rpo: 15m\n", "    rpo: 15\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "sources[1].rpo", "15", "input should be a valid string", plan_file.line_of("rpo: 15")),
    ]


@pytest.mark.parametrize("old, new, path, item", [
    ("    url: repository\n", "", "targets[0].url", "  - name: dr-site"),
    ("    domain: region-b\n", "", "targets[0].domain", "  - name: dr-site"),
    ("  - name: dr-site\n    url: repository\n", "  - url: repository\n", "targets[0].name", "  - url: repository"),
    ("    type: files\n    schedule", "    schedule", "sources[1].type", "  - name: config"),
    ("    kind: provider\n", "", "failure_domains[0].kind", "  - name: cloud"),
])
def test_missing_required_field(plan_file, registry, old, new, path, item):
    """A missing field has no line of its own: the problem points at its item."""
    plan_file.replace(old, new)
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, path, MISSING, REQUIRED, plan_file.line_of(item)),
    ]


def test_missing_required_top_level_fields(plan_file, registry):
    plan_file.replace("version: 1\n", "")
    plan_file.replace("protects_against: [cluster-a, region-a]\n", "")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "version", MISSING, REQUIRED, None),
        Problem(plan_file.path, "protects_against", MISSING, REQUIRED, None),
    ]


def test_empty_lists_where_one_item_is_required(plan_file, registry):
    plan_file.replace("protects_against: [cluster-a, region-a]\n", "protects_against: []\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "protects_against", "list",
                "list should have at least 1 item after validation, not 0", plan_file.line_of("protects_against")),
    ]


def test_wrong_types_are_all_reported(plan_file, registry):
    plan_file.replace("version: 1\n", "version: 2\n")
    plan_file.replace("name: test-plan\n", "name: Test Plan\n")
    plan_file.replace("    kind: provider\n", "    kind: planet\n")
    plan_file.replace("protects_against: [cluster-a, region-a]\n", "protects_against: cluster-a\n")
    plan_file.replace("    domain: region-b\n", "    domain: region-b\n    immutability: maybe\n")
    plan_file.replace("  keep_last: 3\n", "  keep_last: -1\n")
    plan_file.replace("    sensitivity: secret\n", "    sensitivity: top-secret\n")
    path = plan_file.path
    assert plan_file.problems(registry) == [
        Problem(path, "version", "2", "input should be 1", 1),
        Problem(path, "name", "'Test Plan'", NAME_HINT, 2),
        Problem(path, "failure_domains[0].kind", "'planet'",
                "input should be 'provider', 'account', 'region', 'zone', 'cluster', 'site' or 'host'",
                plan_file.line_of("kind: planet")),
        Problem(path, "protects_against", "'cluster-a'", "input should be a valid list",
                plan_file.line_of("protects_against")),
        Problem(path, "targets[0].immutability", "'maybe'",
                "input should be a valid dictionary or instance of ImmutabilitySpec",
                plan_file.line_of("immutability")),
        Problem(path, "sources[2].sensitivity", "'top-secret'", "input should be 'public', 'internal' or 'secret'",
                plan_file.line_of("top-secret")),
        Problem(path, "retention.keep_last", "-1", "input should be greater than or equal to 0",
                plan_file.line_of("keep_last")),
    ]


def test_a_section_of_the_wrong_shape(plan_file, registry):
    plan_file.replace("retention:\n  keep_last: 3\n", "retention: [3]\n")
    plan_file.replace("targets:\n", "targets:\n  - s3://bucket/prefix\n")
    path = plan_file.path
    assert plan_file.problems(registry) == [
        Problem(path, "targets[0]", "'s3://bucket/prefix'", "input should be a valid dictionary or instance of TargetSpec",
                plan_file.line_of("s3://bucket/prefix")),
        Problem(path, "retention", "list", "input should be a valid dictionary or instance of RetentionSpec",
                plan_file.line_of("retention: [3]")),
    ]


# -- cross-field rules ---------------------------------------------------------------------------
def test_duplicate_source_names(plan_file, registry):
    plan_file.replace("  - name: secrets\n", "  - name: config\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "sources", "the name 'config' 2 times", "each name once", plan_file.line_of("sources:")),
    ]


def test_duplicate_names_in_every_group(plan_file, registry):
    plan_file.replace("    url: repository\n    domain: region-b\n",
                      "    url: repository\n    domain: region-b\n  - name: dr-site\n    url: other\n    domain: region-b\n")
    plan_file.replace("            kind: cluster\n", "            kind: cluster\n          - name: cluster-a\n"
                      "            kind: cluster\n")
    plan_file.replace("    hosts: [\"git.example.com\"]\n", "    hosts: [\"git.example.com\"]\n  - name: platform-git\n"
                      "    domain: region-b\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "failure_domains", "the name 'cluster-a' 2 times", "each name once", 3),
        Problem(plan_file.path, "locations", "the name 'platform-git' 2 times", "each name once",
                plan_file.line_of("locations:")),
        Problem(plan_file.path, "targets", "the name 'dr-site' 2 times", "each name once", plan_file.line_of("targets:")),
    ]


def test_undefined_domain_references(plan_file, registry):
    plan_file.replace("    domain: region-b\n", "    domain: region-z\n")
    plan_file.replace("[cluster-a, region-a]", "[cluster-a, region-q]")
    plan_file.replace("    domain: cluster-a\n", "    domain: cluster-b\n")
    plan_file.replace("    domain: region-a\n", "    domain: regoin-a\n")
    path = plan_file.path
    assert plan_file.problems(registry) == [
        Problem(path, "locations[0].domain", "'regoin-a'", DOMAINS, plan_file.line_of("regoin-a")),
        Problem(path, "placement_rules[0].domain", "'cluster-b'", DOMAINS, plan_file.line_of("cluster-b")),
        Problem(path, "targets[0].domain", "'region-z'", DOMAINS, plan_file.line_of("region-z")),
        Problem(path, "protects_against[1]", "'region-q'", DOMAINS, plan_file.line_of("region-q")),
    ]


def test_source_sent_to_an_undefined_target(plan_file, registry):
    plan_file.replace("    rpo: 15m\n", "    rpo: 15m\n    targets: [dr-site, nowhere]\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "sources[1].targets[1]", "'nowhere'", "a target declared under targets (dr-site)",
                plan_file.line_of("nowhere")),
    ]


def test_no_target_outside_the_protected_domains(plan_file, registry):
    plan_file.replace("    domain: region-b\n", "    domain: region-a\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "targets", "every target inside a protected domain (dr-site in cloud/region-a)",
                "at least one target outside every domain in protects_against (cluster-a, region-a): "
                "a backup lost with the cluster is not disaster recovery", plan_file.line_of("targets:")),
    ]


def test_a_target_inside_the_protected_cluster_is_fine_when_another_survives(plan_file, registry):
    plan_file.replace("    domain: region-b\n", "    domain: region-b\n  - name: near\n    url: near\n"
                      "    domain: cluster-a\n")
    plan_file.write()
    plan = load_plan(plan_file.path, registry)
    assert plan.primary_target().name == "dr-site"


# -- encryption ----------------------------------------------------------------------------------
def test_private_age_key_in_recipients_is_refused_and_not_echoed(plan_file, registry, age_identity, age_recipient):
    plan_file.replace(age_recipient, age_identity)
    with pytest.raises(PlanError) as info:
        load_plan(plan_file.write(), registry)
    assert info.value.problems == [
        Problem(plan_file.path, "encryption.recipients[0]", "a private age key (redacted)",
                "a public key (age1...): the private key must never be in the plan; keep it where restores "
                "can reach it and declare that place as key_location", plan_file.line_of("AGE-SECRET-KEY")),
    ]
    body = age_identity[len("AGE-SECRET-KEY-1"):]
    for text in (str(info.value), repr(info.value.problems)):
        assert age_identity not in text and body[:8] not in text


def test_private_age_key_is_refused_even_in_lower_case_with_spaces(plan_file, registry, age_identity, age_recipient):
    plan_file.replace(f"[{age_recipient}]", f'["  {age_identity.lower()} "]')
    (problem,) = plan_file.problems(registry)
    assert problem.found == "a private age key (redacted)"
    assert age_identity.lower()[16:24] not in str(problem)


def test_private_age_key_given_as_a_scalar_is_not_echoed(plan_file, registry, age_identity, age_recipient):
    plan_file.replace(f"[{age_recipient}]", age_identity)
    problems = plan_file.problems(registry)
    assert age_identity[16:] not in repr(problems)


def test_invalid_public_key(plan_file, registry, age_recipient):
    plan_file.replace(age_recipient, "age1notakey")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "encryption.recipients[0]", "'age1notakey...'", "an age X25519 public key (age1...)",
                plan_file.line_of("age1notakey")),
    ]


def test_secret_source_without_recipients(plan_file, registry, age_recipient):
    plan_file.replace(f"  recipients: [{age_recipient}]\n", "")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "encryption.recipients", "no recipients",
                "at least one age public key: sources secrets hold secret material, which is stored only encrypted",
                plan_file.line_of("encryption:")),
    ]


def test_no_recipients_needed_without_secret_sources(plan_file, registry, age_recipient):
    plan_file.replace(f"  recipients: [{age_recipient}]\n", "")
    plan_file.replace("    sensitivity: secret\n", "    sensitivity: internal\n")
    plan_file.write()
    assert load_plan(plan_file.path, registry).spec.encryption.recipients == []


# -- the file itself -----------------------------------------------------------------------------
def test_missing_file(tmp_path, registry):
    path = str(tmp_path / "nowhere.yaml")
    with pytest.raises(PlanError) as info:
        load_plan(path, registry)
    assert info.value.problems == [Problem(path, "", "no such file", "a path to a plan YAML file", None)]
    assert str(info.value) == f"{path}: (top level): found no such file; expected a path to a plan YAML file"


def test_a_directory_is_not_a_plan(tmp_path, registry):
    with pytest.raises(PlanError) as info:
        load_plan(str(tmp_path), registry)
    assert info.value.problems == [
        Problem(str(tmp_path), "", "an unreadable file (IsADirectoryError)", "a readable UTF-8 YAML file", None)]


def test_file_that_is_not_utf8(tmp_path, registry):
    path = tmp_path / "plan.yaml"
    path.write_bytes(base_text().encode("utf-8") + b"description: caf\xe9\n")
    with pytest.raises(PlanError) as info:
        load_plan(str(path), registry)
    assert info.value.problems == [
        Problem(str(path), "", "an unreadable file (UnicodeDecodeError)", "a readable UTF-8 YAML file", None)]


def test_a_directory_instead_of_a_file(tmp_path, registry):
    # (an unreadable-mode file cannot be tested here: tests and CI run as root, which reads it)
    with pytest.raises(PlanError) as info:
        load_plan(str(tmp_path), registry)
    assert info.value.problems == [
        Problem(str(tmp_path), "", "an unreadable file (IsADirectoryError)", "a readable UTF-8 YAML file", None)]


def test_invalid_yaml_names_the_line(plan_file, registry):
    plan_file.replace("  - name: dr-site\n", "  - name: dr-site: with a colon\n")
    assert plan_file.problems(registry) == [
        Problem(plan_file.path, "", "invalid YAML (mapping values are not allowed here)", "a YAML mapping",
                plan_file.line_of("dr-site: with")),
    ]


def test_invalid_yaml_bad_indentation(plan_file, registry):
    plan_file.replace("    url: repository\n", "   url: repository\n")
    (problem,) = plan_file.problems(registry)
    assert problem.found.startswith("invalid YAML (") and problem.line == plan_file.line_of("url: repository")


@pytest.mark.parametrize("text, found", [
    ("- version: 1\n- name: x\n", "list"),
    ("just a sentence\n", "'just a sentence'"),
    ("42\n", "42"),
    ("", "None"),
    ("# only a comment\n", "None"),
])
def test_plan_that_is_not_a_mapping(tmp_path, registry, text, found):
    plan = PlanFile(tmp_path, text)
    assert plan.problems(registry) == [Problem(plan.path, "", found, "a YAML mapping of plan fields", None)]


def test_two_yaml_documents(tmp_path, registry):
    plan = PlanFile(tmp_path, base_text() + "---\nversion: 1\n")
    assert plan.problems(registry) == [
        Problem(plan.path, "", "invalid YAML (but found another document)", "a YAML mapping", plan.line_of("---"))]


# -- every problem at once -----------------------------------------------------------------------
def test_every_structural_problem_is_reported_at_once(plan_file, registry):
    plan_file.replace("sources:\n", "sourcse:\n")
    plan_file.replace("    kind: provider\n", "    kind: provder\n")
    plan_file.replace("    url: repository\n", "")
    plan_file.replace("  keep_last: 3\n", "  keep_lsat: 3\n")
    plan_file.replace("  key_location: offline-safe\n", "  key_location: [offline-safe]\n")
    problems = plan_file.problems(registry)
    assert [(p.path, p.line) for p in problems] == [
        ("failure_domains[0].kind", plan_file.line_of("provder")),
        ("encryption.key_location", plan_file.line_of("key_location")),
        ("targets[0].url", plan_file.line_of("name: dr-site")),
        ("sources", None),
        ("retention.keep_lsat", plan_file.line_of("keep_lsat")),
        ("sourcse", plan_file.line_of("sourcse")),
    ]
    assert "did you mean 'keep_last'?" in problems[4].expected
    assert "did you mean 'sources'?" in problems[5].expected


def test_every_option_and_rule_problem_is_reported_at_once(plan_file, registry, age_recipient):
    plan_file.replace("    type: git\n", "    type: gti\n")
    plan_file.replace("    paths: [config]\n", "    paths: config\n")
    plan_file.replace("  - name: secrets\n", "  - name: config\n")
    plan_file.replace("[cluster-a, region-a]", "[cluster-a, region-q]")
    plan_file.replace(age_recipient, "age1notakey")
    problems = plan_file.problems(registry)
    assert [(p.path, p.line) for p in problems] == [
        ("sources[0].type", plan_file.line_of("type: gti")),
        ("sources[1].paths", plan_file.line_of("paths: config")),
        ("sources", plan_file.line_of("sources:")),
        ("protects_against[1]", plan_file.line_of("region-q")),
        ("encryption.recipients[0]", plan_file.line_of("age1notakey")),
    ]
    message = str(PlanError(problems))
    assert message.count(plan_file.path) == 5 and len(message.splitlines()) == 5


def test_structural_and_rule_problems_are_reported_together(plan_file, registry):
    plan_file.replace("  keep_last: 3\n", "  keep_lsat: 3\n")
    plan_file.replace("    domain: region-b\n", "    domain: region-z\n")
    plan_file.replace("    type: git\n", "    type: gti\n")
    paths = [p.path for p in plan_file.problems(registry)]
    assert {"retention.keep_lsat", "targets[0].domain", "sources[0].type"} <= set(paths)


# -- the CLI --------------------------------------------------------------------------------------
def _run_cli(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_reports_every_problem_and_exits_2(plan_file, capsys):
    plan_file.replace("sources:\n", "sourcse:\n")
    plan_file.replace('"0 * * * *"', '"61 * * * *"')
    code, out, err = _run_cli(capsys, ["snapshots", "--plan", plan_file.write()])
    assert code == 2
    assert "Traceback" not in err and "Traceback" not in out
    assert "the plan is not valid (2 problems)" in err
    assert f"{plan_file.path}:{plan_file.line_of('sourcse')}: sourcse: found unknown key 'sourcse'; " \
           "expected did you mean 'sources'?" in err
    assert f"{plan_file.path}: sources: found {MISSING}" in err


@pytest.mark.parametrize("case", ["missing", "directory", "list", "invalid-yaml", "unknown-type", "no-survivor"])
def test_cli_never_shows_a_traceback_for_a_bad_plan(tmp_path, capsys, case):
    plan = PlanFile(tmp_path)
    if case == "list":
        plan.text = "- a\n- b\n"
    elif case == "invalid-yaml":
        plan.replace("version: 1\n", "version: [1\n")
    elif case == "unknown-type":
        plan.replace("    type: git\n", "    type: gti\n")
    elif case == "no-survivor":
        plan.replace("    domain: region-b\n", "    domain: cluster-a\n")
    path = {"missing": str(tmp_path / "missing.yaml"), "directory": str(tmp_path)}.get(case) or plan.write()
    code, out, err = _run_cli(capsys, ["snapshots", "--plan", path])
    assert code == 2
    assert "Traceback" not in err and "Traceback" not in out
    assert err.startswith("dr: the plan is not valid (1 problem):\n")


def test_cli_json_lists_the_problems(plan_file, capsys):
    plan_file.replace("    type: git\n", "    type: gti\n")
    code, out, err = _run_cli(capsys, ["snapshots", "--plan", plan_file.write(), "--json"])
    assert code == 2 and "Traceback" not in err
    document = json.loads(out)
    assert (document["schema_version"], document["error"]["kind"], document["error"]["exit_code"]) == (1, "plan", 2)
    assert document["error"]["problems"] == [
        f"{plan_file.path}:{plan_file.line_of('type: gti')}: sources[0].type: found unknown exporter type 'gti'; "
        f"expected did you mean 'git'? an installed exporter: {', '.join(Registry().names())} (see 'dr plugins')"]


def test_cli_does_not_print_a_private_key_from_recipients(plan_file, capsys, age_identity, age_recipient):
    plan_file.replace(age_recipient, age_identity)
    code, out, err = _run_cli(capsys, ["backup", "--plan", plan_file.write()])
    assert code == 2 and "Traceback" not in err
    assert age_identity[16:] not in out + err


def test_cli_does_not_print_a_private_key_given_as_a_scalar(plan_file, capsys, age_identity, age_recipient):
    plan_file.replace(f"[{age_recipient}]", age_identity)
    code, out, err = _run_cli(capsys, ["backup", "--plan", plan_file.write()])
    assert code == 2
    assert age_identity[16:] not in out + err


# -- known gaps: inputs that escape as something other than PlanError ----------------------------
def test_a_huge_integer_is_a_plan_error(plan_file, registry):
    plan_file.replace("  keep_last: 3\n", f"  keep_last: {'9' * 5000}\n")
    plan_file.problems(registry)


def test_deeply_nested_yaml_is_a_plan_error(plan_file, registry):
    plan_file.replace("version: 1\n", "version: 1\ndescription: " + "[" * 1000 + "]" * 1000 + "\n")
    plan_file.problems(registry)


def test_a_key_given_twice_is_a_problem(plan_file, registry):
    plan_file.text += "sources:\n  - {name: only-this, type: files, paths: [x]}\n"
    problems = plan_file.problems(registry)
    lines = plan_file.text.splitlines()
    second = len(lines) - lines[::-1].index("sources:")
    assert any(p.path == "sources" and p.line == second and "first on line" in p.found for p in problems)


def test_unsupported_target_url_scheme_is_a_plan_error(plan_file, registry):
    plan_file.replace("    url: repository\n", "    url: gs://bucket/prefix\n")
    (problem,) = plan_file.problems(registry)
    assert problem.path == "targets[0].url"


def test_a_broken_installed_exporter_is_a_plan_error(plan_file):
    broken = EntryPoint("broken", "dr_no_such_module:Exporter", "dr.exporters")
    registry = Registry(list(entry_points(group="dr.exporters")) + [broken])
    plan_file.replace("    type: git\n", "    type: broken\n")
    plan_file.write()
    try:
        load_plan(plan_file.path, registry)
    except PlanError:
        return
    pytest.fail("loaded")


# -- property-based ------------------------------------------------------------------------------
BASE_DATA = yaml.safe_load(base_text())
_REGISTRY = Registry()

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=20),
    st.sampled_from(["", "1h", "0 * * * *", "cluster-a", "region-b", "git", "files", "secret", "age1x"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=10), inner, max_size=3)), max_leaves=6)


def _paths(node, prefix=()):
    """Every place in the document: (container path, key or index)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield prefix, key
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield prefix, index
            yield from _paths(value, prefix + (index,))


def _at(node, path):
    for part in path:
        node = node[part]
    return node


@st.composite
def mutated_plans(draw):
    data = yaml.safe_load(yaml.safe_dump(BASE_DATA))
    for _ in range(draw(st.integers(1, 3))):
        places = list(_paths(data))
        if not places:
            break
        parent_path, key = draw(st.sampled_from(places))
        parent = _at(data, parent_path)
        action = draw(st.sampled_from(["delete", "rename", "replace"]))
        if action == "delete":
            del parent[key]
        elif action == "rename" and isinstance(parent, dict):
            new_key = draw(st.text(min_size=1, max_size=12))
            parent[new_key] = parent.pop(key)
        else:
            parent[key] = draw(values)
    return data


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated_plans())
def test_any_mutation_either_loads_or_is_a_plan_error(tmp_path_factory, data):
    path = str(tmp_path_factory.getbasetemp() / "mutated-plan.yaml")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    try:
        load_plan(path, _REGISTRY)
    except PlanError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert problem.file == path
            assert isinstance(problem.path, str) and problem.found and problem.expected
            assert problem.line is None or problem.line >= 1
            assert "Traceback" not in str(problem)


# Where an unknown key can go, and the keys valid there.
KEY_PLACES = {
    (): list(PlanSpec.model_fields),
    ("failure_domains", 0): list(DomainSpec.model_fields),
    ("locations", 0): list(LocationSpec.model_fields),
    ("placement_rules", 0): list(PlacementRuleSpec.model_fields),
    ("encryption",): list(EncryptionSpec.model_fields),
    ("targets", 0): list(TargetSpec.model_fields),
    ("retention",): list(RetentionSpec.model_fields),
    ("sources", 1): list(SOURCE_COMMON_KEYS),
}
_PLUGIN_KEYS = set(_REGISTRY.get("git").Options.model_fields) | set(_REGISTRY.get("files").Options.model_fields)


@st.composite
def typos(draw):
    place = draw(st.sampled_from(sorted(KEY_PLACES)))
    valid = KEY_PLACES[place]
    key = draw(st.sampled_from(valid))
    letters = string.ascii_lowercase + "_"
    i = draw(st.integers(0, len(key) - 1))
    edit = draw(st.sampled_from(["delete", "insert", "substitute", "transpose"]))
    if edit == "delete":
        typo = key[:i] + key[i + 1:]
    elif edit == "insert":
        typo = key[:i] + draw(st.sampled_from(letters)) + key[i:]
    elif edit == "substitute":
        typo = key[:i] + draw(st.sampled_from(letters)) + key[i + 1:]
    else:
        typo = key[:i] + key[i + 1:i + 2] + key[i] + key[i + 2:]
    assume(typo and typo not in valid and typo not in _PLUGIN_KEYS)
    return place, key, typo


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=typos())
def test_a_misspelt_key_is_reported_with_the_valid_key(tmp_path_factory, case):
    place, key, typo = case
    data = yaml.safe_load(yaml.safe_dump(BASE_DATA))
    container = _at(data, place)
    if key in container:  # rename in place, keeping the order of keys
        renamed = {(typo if k == key else k): v for k, v in container.items()}
        container.clear()
        container.update(renamed)
    else:
        container[typo] = "x"
    path = str(tmp_path_factory.getbasetemp() / "typo-plan.yaml")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(PlanError) as info:
        load_plan(path, _REGISTRY)
    problems = info.value.problems
    unknown = [p for p in problems if p.found == f"unknown key '{typo}'"]
    if unknown:
        (problem,) = unknown
        assert problem.line is not None
        assert key in problem.expected.split("valid keys here: ", 1)[1].split(", ")
        suggested = problem.expected.split("'")[1]
        assert problem.expected.startswith("did you mean '")
        assert suggested in KEY_PLACES[place]
        # The suggestion is a nearest valid key: none is closer than the one misspelt.
        ratio = difflib.SequenceMatcher(None, typo, key).ratio()
        assert difflib.SequenceMatcher(None, typo, suggested).ratio() >= ratio
    else:
        # A required key of a source was renamed: the structure check reports it missing
        # (the misspelling itself is only an exporter option until the source is valid).
        assert place == ("sources", 1) and key in ("name", "type")
        assert [p.path for p in problems] == [f"sources[1].{key}"]


# -- remap kinds come from the exporters (contract v2) --------------------------------------------
_REMAPS = "retention:\n  keep_last: 3\nrestore:\n  remaps:\n    - kind: {kind}\n      old: a\n      new: b\n{scope}"


def test_a_remap_kind_that_an_exporter_of_the_plan_declares_loads(plan_file, registry):
    plan_file.replace("retention:\n  keep_last: 3\n", _REMAPS.format(kind="git-remote", scope=""))
    plan = load_plan(plan_file.write(), registry)
    assert plan.spec.restore.remaps[0].kind == "git-remote"


def test_a_remap_kind_no_exporter_of_the_plan_applies_names_the_ones_that_do(plan_file, registry):
    # kubernetes declares `namespace`, but no source of this plan is a kubernetes source
    plan_file.replace("retention:\n  keep_last: 3\n", _REMAPS.format(kind="namespace", scope=""))
    [problem] = plan_file.problems(registry)
    assert problem.path == "restore.remaps[0].kind" and problem.line == plan_file.line_of("kind: namespace")
    assert "'namespace', which no exporter of the plan applies" in problem.found
    assert problem.expected.startswith("a remap kind one of them declares: git-remote (git)")


def test_a_remap_scoped_to_sources_is_judged_by_their_exporters(plan_file, registry):
    scope = "      sources: [config]\n"
    plan_file.replace("retention:\n  keep_last: 3\n", _REMAPS.format(kind="git-remote", scope=scope))
    [problem] = plan_file.problems(registry)
    assert "no exporter of its sources applies" in problem.found and problem.expected.endswith(
        "none (docs/restore.md)")
