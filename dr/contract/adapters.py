"""Adapters that let an exporter written for an older contract run under this one.

Where it sits: the registry (dr.contract.registry) loads a plugin, sees its
`contract_version`, and wraps a class that speaks a supported older version in the adapter
below. The core then asks every exporter the same questions; only this module knows what an
older version meant. The deprecation policy (docs/exporters.md) says how long each lives.
"""

from __future__ import annotations

from dr.contract import CONTRACT_VERSION, Exporter


def adapt_v1(cls: type[Exporter]) -> type[Exporter]:
    """A v1 exporter under contract v2.

    v1 had no declarations, so the v2 defaults already say what v1 meant (no remap kinds of its
    own, no ordering role, the exporter's own default destination), with one difference: a v1
    exporter heard every plan remap that applied to its source as `<kind>:<old>`, whatever the
    kind. The adapter keeps that.
    """

    def request_remap(self: Exporter, kind: str, old: str, new: str) -> dict[str, str]:
        return {f"{kind}:{old}": new}

    return type(cls.__name__, (cls,), {
        "__module__": cls.__module__, "__doc__": cls.__doc__, "request_remap": request_remap,
        "adapted_from": 1, "contract_version": CONTRACT_VERSION})


# contract version -> the adapter that brings a class of that version up to CONTRACT_VERSION
ADAPTERS = {1: adapt_v1}
