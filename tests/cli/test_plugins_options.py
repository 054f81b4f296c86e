"""`dr plugins` lists each exporter's plan options from its options model, in text and --json,
and docs/json.md documents every key of that document (issue 32, item 6)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.contract import ExporterOptions
from dr.contract.option_docs import option_docs
from tests.plugins.installing import install_distribution

JSON_DOC = Path(__file__).resolve().parents[2] / "docs" / "json.md"


@pytest.fixture
def plugins(tmp_path, monkeypatch, capsys) -> dict[str, dict]:
    site = tmp_path / "site"
    install_distribution(site, "acme_blanks", {"blanks": "tests.plugins.acme_blanks:BlanksExporter"})
    monkeypatch.syspath_prepend(str(site))
    assert main(["plugins", "--json"]) == Exit.OK
    return {e["name"]: e for e in json.loads(capsys.readouterr().out)["exporters"]}


def _by_name(exporter: dict) -> dict[str, dict]:
    return {o["name"]: o for o in exporter["options"]}


def test_json_lists_name_type_default_and_description_from_the_options_model(plugins):
    files = _by_name(plugins["files"])
    assert files["paths"] == {"name": "paths", "type": "list[str]", "required": True, "default": None,
                              "description": "directories or files; relative ones resolve against the plan's folder"}
    assert files["exclude"]["default"] == [] and files["exclude"]["description"].startswith("globs on the path")
    assert (files["one_file_system"]["type"], files["one_file_system"]["default"]) == ("bool", True)
    git = _by_name(plugins["git"])
    assert git["repositories[].url"]["required"] and "local path" in git["repositories[].url"]["description"]
    blanks = _by_name(plugins["blanks"])  # a third party's, installed as a distribution
    assert blanks["compare"]["type"] == "'path' | 'fingerprint' | 'none'" and blanks["compare"]["default"] == "path"
    vault = plugins["vault"]["options"]  # auth is a union of models: each key once, with every variant's type
    assert [o["type"] for o in vault if o["name"] == "auth.method"] == ["'token' | 'approle' | 'kubernetes'"]


def test_text_names_each_plan_option(plugins, capsys):
    assert main(["plugins"]) == Exit.OK
    text = capsys.readouterr().out
    assert ("plan option paths (list[str], required): directories or files; relative ones resolve against the "
            "plan's folder") in text
    assert "plan option one_file_system (bool, default true): do not descend into directories" in text
    assert "plan option folder (str, required)\n" in text  # the blanks plugin's: no description


def test_descriptions_come_from_the_field_a_comment_block_above_or_a_comment_after_it():
    class Options(ExporterOptions):
        #: where the tables are,
        #: relative to the plan's folder
        folder: str
        rows: int = 10  # the most rows read
        from_field: bool = __import__("pydantic").Field(False, description="the field's own")
        bare: list[str] = []

    docs = {d.name: d for d in option_docs(Options)}
    assert docs["folder"].description == "where the tables are, relative to the plan's folder"
    assert (docs["rows"].description, docs["rows"].default) == ("the most rows read", 10)
    assert docs["from_field"].description == "the field's own"
    assert (docs["bare"].description, docs["bare"].required) == ("", False)


def test_docs_json_documents_every_key_of_the_plugins_document(plugins):
    documented = set(re.findall(r"^  \| `exporters\[\]\.([a-z_.\[\]]+)` \|", JSON_DOC.read_text(), re.M))
    keys = {k for e in plugins.values() for k in e} | {f"options[].{k}" for e in plugins.values()
                                                       for o in e["options"] for k in o}
    assert documented == keys


def test_every_option_of_every_builtin_exporter_has_a_description(plugins):
    from dr.contract.registry import BUILTIN

    bare = [f"{name}: {o['name']}" for name in BUILTIN for o in plugins[name]["options"] if not o["description"]]
    assert bare == [], "describe these options in their models (Field(description=...) or a comment)"
