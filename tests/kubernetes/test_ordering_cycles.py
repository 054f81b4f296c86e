"""Restore order of resource types when rules form a cycle (dr.model.levelling's policy)."""

from __future__ import annotations

from dr.exporters.kubernetes import ordering
from dr.exporters.kubernetes.ordering import TypeInfo, levels
from dr.exporters.kubernetes.resources import ResourceType


def _t(plural: str) -> TypeInfo:
    return TypeInfo(ResourceType("", "v1", plural, plural.title(), True))


def test_types_in_a_cycle_share_a_level_after_the_rest_and_say_so(monkeypatch):
    monkeypatch.setattr(ordering, "RULES", [("secrets", "configmaps", "one way"), ("configmaps", "secrets", "back"),
                                            ("configmaps", "pods", "pods mount them")])
    plan = levels([_t("pods"), _t("secrets"), _t("configmaps"), _t("namespaces")])
    assert [[i.rtype.qualified for i in level.types] for level in plan] == [
        ["namespaces"], ["configmaps", "secrets"], ["pods"]]
    assert plan[1].after["secrets"][0] == ("restored together with configmaps: the ordering rules form a cycle "
                                           "between them")
    assert plan[1].after["secrets"][1] == "after configmaps: back"
    assert plan[2].after["pods"] == ["after configmaps: pods mount them"]
