"""Exporters' audit knowledge as data (dr.audit.declared): merged, or refused with a reason."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from types import MappingProxyType

from dr.audit.declared import GENERIC, Declared, declared
from dr.audit.findings import CODES, Finding, WARNING, runbook_for
from dr.contract import FindingCode
from tests.conformance.test_conformance_catches import NotesExporter

OWN = FindingCode("noted-archive-lost", "A notes archive is lost", "Copy the archive out, then back up again.",
                  "https://example.org/runbooks/noted-archive-lost")


class Noted(NotesExporter):
    """A third party's exporter with declarations: one code of its own, one kind on a code of
    dr's, and three that cannot be merged."""

    type_name = "noted"
    finding_codes = (OWN, FindingCode("image-in-failed-domain", "Other words", "Other action."))
    lost_kind_codes = MappingProxyType({"noted-archive": OWN.code, "noted-mirror": "registry-in-failed-domain",
                                        "noted-index": "no-such-code", "image": "registry-in-failed-domain"})


def test_a_plugin_brings_its_codes_and_what_collides_is_refused_with_a_reason():
    merged = Declared()
    try:
        merged.merge("noted", Noted)
        assert merged.code_for("noted-archive") == OWN.code and merged.code_for("noted-mirror") == \
            "registry-in-failed-domain"
        assert runbook_for(OWN.code) == OWN.runbook and CODES[OWN.code].owner == "noted"
        assert list(CODES).index(OWN.code) < list(CODES).index(GENERIC)  # listed before the generic blocker
        assert merged.code_for("noted-index") == GENERIC and merged.code_for("image") == "image-in-failed-domain"
        assert CODES["image-in-failed-domain"].title != "Other words"
        refused = "\n".join(merged.refused)
        assert len(merged.refused) == 3, refused
        assert "'image-in-failed-domain', which dr declares with other words" in refused
        assert "'noted-index' to finding code 'no-such-code', which nothing declares" in refused
        assert "'image' to 'registry-in-failed-domain', which is already mapped to 'image-in-failed-domain'" in refused
        [finding] = merged.findings()[:1]
        assert finding.code == "declaration-refused" and finding.severity == WARNING
        assert Finding(OWN.code, "blocker", "lost").title == OWN.title
    finally:
        CODES.pop(OWN.code, None)  # the table is the process's: leave it as the other tests read it


def test_the_built_in_exporters_own_codes_come_from_their_declarations():
    from dr.contract.registry import Registry

    registry = Registry([EntryPoint("vault", "dr.exporters.vault:VaultExporter", "dr.exporters")])
    knowledge = declared(registry)
    assert knowledge.code_for("unseal-kms") == "unseal-key-in-failed-domain" and not knowledge.refused
    assert CODES["unseal-key-in-failed-domain"].owner == "vault"
    assert knowledge.code_for("secretsmanager-secret") == GENERIC  # that exporter is not installed here
