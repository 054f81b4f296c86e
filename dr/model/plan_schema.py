"""The JSON Schema of a plan file, for editors and CI (`dr plan schema`).

Generated, never written by hand: the plan's own fields come from the plan model (PlanSpec),
and each source's from the common source keys plus its exporter's options model, so an
exporter's new option is in the schema the moment it is in the model. A source is one of the
installed types (`type` picks which), and every key it may have is listed: an unknown key is an
error in an editor as it is in `dr plan validate`.

The schema checks shapes and types; the rules across fields (a domain that exists, a target that
survives, a cron expression, a duration) are `dr plan validate`'s.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel

from dr.model.plans import PlanSpec, SourceSpec

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def plan_schema(options_models: Mapping[str, type[BaseModel]]) -> dict[str, Any]:
    """The schema of a plan whose sources may be of the types `options_models` names
    (exporter type -> its options model)."""
    schema = PlanSpec.model_json_schema()
    defs = schema.setdefault("$defs", {})
    common = SourceSpec.model_json_schema(ref_template="#/$defs/{model}")
    defs.update(common.pop("$defs", {}))
    defs["SourceSpec"] = {"description": "one source: `type` names its exporter (`dr plugins` lists them)",
                          "oneOf": [{"$ref": f"#/$defs/{_source_def(t)}"} for t in sorted(options_models)]}
    for type_name, model in sorted(options_models.items()):
        defs[_source_def(type_name)] = _source(type_name, model, common, defs)
    return {"$schema": DIALECT, "title": "dr plan", **schema}


def _source_def(type_name: str) -> str:
    return f"source.{type_name}"


def _source(type_name: str, model: type[BaseModel], common: dict, defs: dict) -> dict[str, Any]:
    """A source of `type_name`: the common keys, `type` fixed to it, and its options. The
    options model's own definitions are kept under the type's name, so two exporters'
    same-named models never collide."""
    options = model.model_json_schema(ref_template=f"#/$defs/{type_name}.{{model}}")
    defs.update({f"{type_name}.{name}": d for name, d in options.pop("$defs", {}).items()})
    properties = {**common["properties"], **options.get("properties", {}),
                  "type": {"const": type_name}}
    return {"title": f"{type_name} source", "description": (model.__doc__ or "").strip(),
            "type": "object", "properties": properties, "additionalProperties": False,
            "required": sorted(set(common.get("required", [])) | set(options.get("required", [])))}
