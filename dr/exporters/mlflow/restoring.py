"""Restoring registered models into a (new or existing) MLflow server, version numbers intact.

How numbers are kept (checked against MLflow 3.17's server): MLflow gives a new version the
number after the highest one the model ever had, deleted ones included, and never reuses one.
So dr creates a model's versions in ascending order; for a number the backup does not hold (a
version deleted at the source) it creates a placeholder version and deletes it at once, which
consumes the number. A version the destination already has is compared, never recreated. If
the destination's counter is already past a missing number (a version deleted there), that
version cannot be recreated with its number: it fails with that reason, the others go on.

What is compared (a second restore is all `unchanged`): per model its description, tags and
aliases; per version its description, tags, stage, source (after remaps) and run (after the
run-id mapping). Description, tags, stage and aliases are changed only with --overwrite
(`conflict` without); a version's source and run cannot be changed in MLflow at all: `failed`
with that reason. Tags and aliases the destination has beyond the backup are left alone
(a registry that is not empty is merged).

Sources: the version's source as recorded, `runs:/<old>/p` rewritten to the recreated run,
then the artifact-root remaps (`--remap-uri OLD=NEW`, plan kind `artifact-root`). An MLflow 3
`models:/m-<id>` source names a logged model that does not exist in a new server: the version
is created from where its bytes are (its storage_location, else the logged model's artifact URI
recorded in the backup) instead (remapped likewise), and the URI as it was is kept
in the tag `dr.source_uri`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Callable, Iterator

from dr.contract import Outcome, OutcomeStatus, RestoreRequest, prefix_rewrite
from dr.exporters.mlflow.locating import rewrite_run
from dr.exporters.mlflow.reading import logged_model_id, logged_model_location
from dr.exporters.mlflow.requesting import Client, MlflowError
from dr.exporters.mlflow.runs import (RunPlan, SharedRuns, create_run, differences, experiment_id, fill_run,
                                      find_run)

REMAP_PREFIX = "artifact-root:"
FROM_COPIES = "sources-from-copies"
SOURCE_URI_TAG = "dr.source_uri"
SOURCE_RUN_TAG = "dr.source_run_id"
# a scheme of its own: MLflow refuses mlflow-artifacts:, models:/ and local sources without a run
PLACEHOLDER = "dr-placeholder:/deleted-version"
P = OutcomeStatus


def remapper(remap: dict[str, str]) -> Callable[[str], str]:
    """The artifact-root remaps of a request, longest prefix first."""
    pairs = sorted(((k[len(REMAP_PREFIX):], v) for k, v in remap.items() if k.startswith(REMAP_PREFIX)),
                   key=lambda p: -len(p[0]))

    def apply(uri: str) -> str:
        for old, new in pairs:
            found = prefix_rewrite(uri, old, new)
            if found is not None:
                return found
        return uri
    return apply


@dataclass
class VersionPlan:
    number: int
    want: dict
    have: dict | None
    mutable: list[str] = field(default_factory=list)  # description, tags, stage
    fixed: list[str] = field(default_factory=list)  # source, run: MLflow cannot change them


class ModelRestore:
    def __init__(self, client: Client, lines: list[dict], request: RestoreRequest,
                 copies: dict[tuple[str, int], str] | None = None, shared: SharedRuns | None = None) -> None:
        self.client, self.request, self.copies = client, request, copies or {}
        self.shared = shared or SharedRuns()
        self.rewrite = remapper(request.remap)
        self.head = lines[0]
        self.name = self.head["name"]
        self.versions = [r for r in lines if r["record"] == "model-version"]
        self.runs = {r["run_id"]: r for r in lines if r["record"] == "run" and "info" in r}
        self.experiments = {r["experiment_id"]: r for r in lines if r["record"] == "experiment"}
        self.logged = {r["model_id"]: r for r in lines if r["record"] == "logged-model"}
        self.run_plans: dict[str, RunPlan] = {}
        self._absent: set[str] = set()  # experiments the destination does not have (planning)

    # -- reading the destination --------------------------------------------------------------
    def _target(self) -> tuple[dict | None, dict[int, dict]]:
        try:
            model = self.client.get("/registered-models/get", name=self.name)["registered_model"]
        except MlflowError as exc:
            if exc.missing:
                return None, {}
            raise
        found = self.client.pages("/model-versions/search", "model_versions", max_results=10000,
                                  filter=f"name = '{_quote(self.name)}'")
        return model, {int(v["version"]): v for v in found}

    def _plan_runs(self) -> None:
        for old, run in self.runs.items():
            with self.shared.lock(old):
                new = self.shared.known.get(old) or self._find(run)
                if new:
                    self.shared.known[old] = new
            plan = RunPlan(old, new)
            if plan.new:
                plan.differences = differences(self.client, run, plan.new)
            self.run_plans[old] = plan

    def _find(self, run: dict) -> str | None:
        if self.shared.empty:
            return None
        record = self.experiments.get(run["info"]["experiment_id"])
        name = (record or {}).get("name") or "Default"
        exp = None if name in self._absent else experiment_id(self.client, record, self.rewrite, False,
                                                              self.shared.experiments)
        if exp is None:
            self._absent.add(name)  # asked once per model, not once per run
        return find_run(self.client, run, exp)

    def _mapped(self) -> dict[str, str]:
        return {old: p.new for old, p in self.run_plans.items() if p.new and p.new != old}

    def _want(self, v: dict) -> dict:
        source = v.get("source", "")
        tags = dict(v.get("tags", {}))
        if source.startswith("models:/m-"):  # a logged model the new server does not have
            where = v.get("storage_location") or logged_model_location(self.logged.get(logged_model_id(v) or "", {}))
            if where:
                tags[SOURCE_URI_TAG] = source
                source = where
        source = self.rewrite(rewrite_run(source, self._mapped()))
        copy = self.copies.get((self.name, int(v["version"])))
        if copy:
            tags.setdefault(SOURCE_URI_TAG, v.get("source", ""))
            source = copy
        run = v.get("run_id") or ""
        new_run = self.run_plans[run].new if run in self.run_plans else run
        if new_run and new_run != run:
            tags[SOURCE_RUN_TAG] = run
        return {"description": v.get("description") or "", "tags": tags, "stage": v.get("current_stage") or "None",
                "source": source, "run_id": new_run or ""}

    def _compare(self, number: int, want: dict, have: dict | None) -> VersionPlan:
        plan = VersionPlan(number, want, have)
        if have is None:
            return plan
        tags = {t["key"]: t.get("value", "") for t in have.get("tags", [])}
        if (have.get("description") or "") != want["description"]:
            plan.mutable.append("description")
        plan.mutable += [f"tag {k}" for k, v in sorted(want["tags"].items()) if tags.get(k) != v]
        if (have.get("current_stage") or "None") != want["stage"]:
            plan.mutable.append("stage")
        if have.get("source", "") != want["source"]:
            plan.fixed.append(f"source is {have.get('source')!r}, the backup's {want['source']!r}")
        if want["run_id"] and (have.get("run_id") or "") != want["run_id"]:
            plan.fixed.append(f"run is {have.get('run_id')!r}, the backup's {want['run_id']!r}")
        return plan

    # -- a drill's comparison ------------------------------------------------------------------
    def fingerprints(self) -> tuple[str, str]:
        """(the destination's, the backup's) fingerprint of this model, for dr drill: the model's
        description, tags and aliases; each version's description, tags, stage, source (after the
        remaps) and run; each run's params, tags and last metrics. Normalised as the restore
        merges: of the tags and aliases, those the backup names (the destination may hold more;
        MLflow adds its own); runs matched by id or by the tag the restore left (their ids are the
        destination's); times and statuses the server stamps left out. Reads only."""
        model, have = self._target()
        self._plan_runs()
        backed = self._backed_up()
        if model is None:
            return "", self._fingerprint(backed, len(self.versions))
        head = self.head
        tags = {t["key"]: t.get("value", "") for t in model.get("tags", [])}
        aliases = {a["alias"]: str(a["version"]) for a in model.get("aliases", [])}
        held = {"model": {"description": model.get("description") or "", "tags": _only(tags, head["tags"]),
                          "aliases": _only(aliases, head["aliases"])}, "versions": {}, "runs": {}}
        for number, want in backed["versions"].items():
            v = have.get(int(number))
            held["versions"][number] = "missing" if v is None else {
                "description": v.get("description") or "", "stage": v.get("current_stage") or "None",
                "tags": _only({t["key"]: t.get("value", "") for t in v.get("tags", [])}, want["tags"]),
                "source": v.get("source", ""), "run_id": (v.get("run_id") or "") if want["run_id"] else ""}
        for old, plan in self.run_plans.items():
            held["runs"][old] = _run_data(self.client, plan.new, self.runs[old]) if plan.new else "missing"
        present = sum(1 for v in held["versions"].values() if v != "missing")
        return self._fingerprint(held, present), self._fingerprint(backed, len(self.versions))

    def _backed_up(self) -> dict:
        head = self.head
        return {"model": {"description": head.get("description") or "", "tags": dict(head["tags"]),
                          "aliases": dict(head["aliases"])},
                "versions": {str(v["version"]): self._want(v) for v in self.versions},
                "runs": {old: {"params": dict(run["params"]), "tags": dict(run["tags"]),
                               "metrics": {k: [m["value"], m.get("step")] for k, m in run["metrics"].items()}}
                         for old, run in self.runs.items()}}

    def _fingerprint(self, entries: dict, present: int) -> str:
        digest = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()
        return f"{present}/{len(self.versions)} versions, sha256 {digest}"

    # -- the restore ---------------------------------------------------------------------------
    def run(self) -> Iterator[Outcome]:
        model, have = self._target()
        self._plan_runs()
        if not self.request.dry_run:
            self._create_runs()
        plans = [self._compare(int(v["version"]), self._want(v), have.get(int(v["version"]))) for v in self.versions]
        yield self._model_outcome(model, plans)
        yield from self._versions(model, plans, have)
        if not self.request.dry_run:
            self._aliases(model)

    def _create_runs(self) -> None:
        for old, plan in self.run_plans.items():
            run = self.runs[old]
            if plan.new is None:
                with self.shared.lock(old):  # another model's restore may have created it meanwhile
                    plan.new = self.shared.known.get(old)
                    if plan.new is None:
                        exp = experiment_id(self.client, self.experiments.get(run["info"]["experiment_id"]),
                                            self.rewrite, True, self.shared.experiments)
                        plan.new, plan.created = create_run(self.client, run, exp), True
                        self.shared.known[old] = plan.new
            elif plan.differences and self.request.overwrite:
                fill_run(self.client, run, plan.new, params=[d[6:] for d in plan.differences if d.startswith("param ")])

    def _model_outcome(self, model: dict | None, plans: list[VersionPlan]) -> Outcome:
        runs = self._runs_said()
        if model is None:
            if self.request.dry_run:
                return Outcome(self.name, P.PLANNED, f"would create the model with {len(plans)} versions"
                               f"{runs}")
            self._create_model()
            return Outcome(self.name, P.RESTORED, f"created with description, {len(self.head['tags'])} tags; "
                           f"aliases {self._aliases_said()}{runs}")
        diffs = self._model_differences(model)
        run_diffs = [f"run {p.old}: {', '.join(p.differences)}" for p in self.run_plans.values() if p.differences]
        if not diffs and not run_diffs:
            return Outcome(self.name, P.UNCHANGED, f"description, tags and aliases as in the backup{runs}")
        what = "; ".join(diffs + run_diffs)
        if not self.request.overwrite:
            return Outcome(self.name, P.CONFLICT, f"differs from the backup ({what}); --overwrite replaces it")
        if self.request.dry_run:
            return Outcome(self.name, P.PLANNED, f"would update {what}")
        self._update_model(model)
        return Outcome(self.name, P.RESTORED, f"updated {what}{runs}")

    def _runs_said(self) -> str:
        moved = [f"{p.old}->{p.new}" for p in self.run_plans.values() if p.new and p.new != p.old]
        planned = [p.old for p in self.run_plans.values() if p.new is None]
        said = f"; runs {', '.join(moved)}" if moved else ""
        return said + (f"; would recreate runs {', '.join(planned)}" if planned else "")

    def _aliases_said(self) -> str:
        return ", ".join(f"@{a}=v{n}" for a, n in sorted(self.head["aliases"].items())) or "none"

    def _model_differences(self, model: dict) -> list[str]:
        tags = {t["key"]: t.get("value", "") for t in model.get("tags", [])}
        aliases = {a["alias"]: str(a["version"]) for a in model.get("aliases", [])}
        out = ["description"] if (model.get("description") or "") != (self.head.get("description") or "") else []
        out += [f"tag {k}" for k, v in sorted(self.head["tags"].items()) if tags.get(k) != v]
        out += [f"alias @{a}" for a, n in sorted(self.head["aliases"].items()) if aliases.get(a) not in (None, n)]
        return out

    def _create_model(self) -> None:
        self.client.post("/registered-models/create", {
            "name": self.name, "description": self.head.get("description") or "",
            "tags": [{"key": k, "value": v} for k, v in sorted(self.head["tags"].items())]})

    def _update_model(self, model: dict) -> None:
        self.client.patch("/registered-models/update", {"name": self.name,
                                                        "description": self.head.get("description") or ""})
        for k, v in sorted(self.head["tags"].items()):
            self.client.post("/registered-models/set-tag", {"name": self.name, "key": k, "value": v})

    def _aliases(self, model: dict | None) -> None:
        """Aliases last: they point at versions that now exist. A differing one was reported as
        a conflict on the model and is moved only with --overwrite (model None: just created)."""
        have = {a["alias"]: str(a["version"]) for a in (model or {}).get("aliases", [])}
        for alias, number in sorted(self.head["aliases"].items()):
            if have.get(alias) == number or (alias in have and not self.request.overwrite):
                continue
            try:
                self.client.post("/registered-models/alias", {"name": self.name, "alias": alias, "version": number})
            except MlflowError:
                pass  # its version could not be restored; that version's outcome says why

    # -- versions ------------------------------------------------------------------------------
    def _versions(self, model: dict | None, plans: list[VersionPlan], have: dict[int, dict]) -> Iterator[Outcome]:
        top = max(have, default=0)
        wanted = {p.number: p for p in plans}
        ahead = 0  # the destination's counter, once a create showed it is ahead of ours
        for number in range(1, max(wanted, default=0) + 1):
            plan = wanted.get(number)
            if number in have:
                if plan:
                    yield self._existing(plan)
                continue
            if number < top or number <= ahead:
                if plan:
                    yield Outcome(self.item(number), P.FAILED, f"the destination already numbered past {number} "
                                  "(a version deleted there); MLflow never reuses a number")
                continue
            if self.request.dry_run:
                if plan:
                    yield Outcome(self.item(number), P.PLANNED, f"would create version {number} from {plan.want['source']}")
                continue
            try:
                got = self._create(plan)
            except MlflowError as exc:
                if exc.status in (0, 401, 403) or plan is None:
                    raise
                # refused (a source MLflow will not take): the number is consumed all the same,
                # so the versions after it keep theirs
                self._delete(self._create(None))
                yield Outcome(self.item(number), P.FAILED, f"the destination refused version {number}: {exc}; "
                              "its number was consumed by a placeholder so the later versions keep theirs")
                continue
            if got != number:
                ahead = got
                self._delete(got)
                if plan:
                    yield Outcome(self.item(number), P.FAILED, f"the destination numbered it {got}: its counter is "
                                  "ahead (versions deleted there); deleted again")
                continue
            if plan is None:
                self._delete(got)  # a placeholder: it consumed the number of a deleted version
                continue
            yield Outcome(self.item(number), P.RESTORED, self._created_said(plan))

    def item(self, number: int) -> str:
        return f"{self.name}/v{number}"

    def _create(self, plan: VersionPlan | None) -> int:
        body = {"name": self.name, "source": PLACEHOLDER, "description": "dr placeholder for a deleted version"}
        if plan:
            want = plan.want
            body = {"name": self.name, "source": want["source"], "description": want["description"],
                    "tags": [{"key": k, "value": v} for k, v in sorted(want["tags"].items())]}
            if want["run_id"]:
                body["run_id"] = want["run_id"]
        got = int(self.client.post("/model-versions/create", body)["model_version"]["version"])
        if plan and got == plan.number and plan.want["stage"] != "None":
            self._stage(got, plan.want["stage"])
        return got

    def _stage(self, number: int, stage: str) -> None:
        self.client.post("/model-versions/transition-stage", {"name": self.name, "version": str(number),
                                                              "stage": stage, "archive_existing_versions": False})

    def _delete(self, number: int) -> None:
        self.client.delete("/model-versions/delete", body={"name": self.name, "version": str(number)})

    def _created_said(self, plan: VersionPlan) -> str:
        w = plan.want
        run = f", run {w['run_id']}" if w["run_id"] else ""
        return f"created as version {plan.number} (stage {w['stage']}, {len(w['tags'])} tags{run}) from {w['source']}"

    def _existing(self, plan: VersionPlan) -> Outcome:
        item = self.item(plan.number)
        if plan.fixed:
            return Outcome(item, P.FAILED, "; ".join(plan.fixed) + ": MLflow cannot change a version's source or run")
        if not plan.mutable:
            return Outcome(item, P.UNCHANGED, "as in the backup")
        what = ", ".join(plan.mutable)
        if not self.request.overwrite:
            return Outcome(item, P.CONFLICT, f"differs from the backup ({what}); --overwrite replaces it")
        if self.request.dry_run:
            return Outcome(item, P.PLANNED, f"would update {what}")
        self._update_version(plan)
        return Outcome(item, P.RESTORED, f"updated {what}")

    def _update_version(self, plan: VersionPlan) -> None:
        number, want = str(plan.number), plan.want
        if "description" in plan.mutable:
            self.client.patch("/model-versions/update", {"name": self.name, "version": number,
                                                         "description": want["description"]})
        for key, value in sorted(want["tags"].items()):
            if f"tag {key}" in plan.mutable:
                self.client.post("/model-versions/set-tag", {"name": self.name, "version": number,
                                                             "key": key, "value": value})
        if "stage" in plan.mutable:
            self._stage(plan.number, want["stage"])


def _only(have: dict, backed_up: dict) -> dict:
    """The entries of `have` under the keys the backup names (None where it lacks one)."""
    return {k: have.get(k) for k in backed_up}


def _run_data(client: Client, run_id: str, backed_up: dict) -> dict:
    """A destination run's params, tags and last metrics under the backup run's keys."""
    data = client.get("/runs/get", run_id=run_id)["run"].get("data", {})
    metrics = {m["key"]: [m["value"], m.get("step")] for m in data.get("metrics", [])}
    return {"params": _only({p["key"]: p["value"] for p in data.get("params", [])}, backed_up["params"]),
            "tags": _only({t["key"]: t["value"] for t in data.get("tags", [])}, backed_up["tags"]),
            "metrics": _only(metrics, backed_up["metrics"])}


def _quote(name: str) -> str:
    return name.replace("'", "\\'")

