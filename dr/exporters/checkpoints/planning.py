"""What the checkpoints exporter tells the restore planner and `dr status` (contract v2).

Where it sits: dr.restore asks every exporter for its default destination, its any-of needs
and its RTO bytes; `dr status` asks for RPO rows. For checkpoints:
  destination  the source root rewritten by a `bucket` remap, else none: each DR copy is
               verified where it is and the trainer loads it in place;
  needs        one per checkpoint a default restore reads (the newest step of each run), met
               when the copy in any one tier survives: restore falls back from tier to tier;
  RTO bytes    the newest copy of each run is what a restore downloads;
  RPO rows     per run and tier (dr.exporters.checkpoints.status); milestone archive tiers
               lag by design, so they are reported but never a breach.
  saves        each recorded copy's save times, measured at the source when it was copied
               (meta written_first, written_last, previous): `dr advise checkpoints`.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from dr.contract import AnyOf, CheckpointSave, Destination, RpoRow, Rewriter, SaveCopy
from dr.model.artifacts import Artifact
from dr.model.durations import format_duration

if TYPE_CHECKING:
    from dr.exporters.checkpoints import CheckpointsExporter

COPY = "checkpoint-copy"  # the artifact kind, and the dependency kind naming where a copy is


def newest_checkpoints(artifacts: list[Artifact]) -> dict[tuple[str, int], list[Artifact]]:
    """The copies a default checkpoints restore reads: the newest step of each run, every tier."""
    newest: dict[str, int] = {}
    for a in artifacts:
        if a.kind == COPY and str(a.meta.get("step", "")).isdigit():
            run = str(a.meta.get("run"))
            newest[run] = max(newest.get(run, -1), int(a.meta["step"]))
    out: dict[tuple[str, int], list[Artifact]] = {}
    for a in artifacts:
        run = str(a.meta.get("run"))
        if a.kind == COPY and run in newest and str(a.meta.get("step")) == str(newest[run]):
            out.setdefault((run, newest[run]), []).append(a)
    return out


def any_tier_needs(artifacts: list[Artifact]) -> list[AnyOf]:
    needs = []
    for (run, number), copies in newest_checkpoints(artifacts).items():
        refs = tuple(d.reference for a in copies for d in a.dependencies if d.kind == COPY)
        needs.append(AnyOf(COPY, f"DR copy of run {run} step {number}", refs))
    return needs


def restore_bytes(artifacts: list[Artifact]) -> dict[str, int]:
    """The newest copy of each run is downloaded; older copies and other records are not read."""
    newest = {id(copies[0]) for copies in newest_checkpoints(artifacts).values()}
    read = sum(int(a.meta.get("bytes", 0)) for a in artifacts if id(a) in newest)
    rest = sum(a.size for a in artifacts if a.kind != COPY)
    return {"checkpoint_download": read, "data_warmup": rest}


def checkpoint_saves(artifacts: list[Artifact], tiers: tuple[str, ...] = ()) -> list[CheckpointSave]:
    """One save per (run, step), whichever tier recorded it; records made before dr measured
    save times (no written_first) are left out. Its copies come in `tiers` order (restore's),
    each restored alone by remap run/step/tier to `<to>/<the checkpoint's path>`."""
    saves: dict[tuple[str, int], CheckpointSave] = {}
    copies: dict[tuple[str, int], list[tuple[int, SaveCopy]]] = {}
    for a in artifacts:
        m = a.meta
        if a.kind != COPY or not isinstance(m.get("written_first"), (int, float)) \
                or not str(m.get("step", "")).isdigit():
            continue
        prev = m.get("previous") if isinstance(m.get("previous"), dict) else {}
        key = (str(m.get("run")), int(m["step"]))
        tier = str(m.get("tier", ""))
        remap = {"run": key[0], "step": str(key[1]), "tier": tier}
        rank = tiers.index(tier) if tier in tiers else len(tiers)
        copies.setdefault(key, []).append((rank, SaveCopy(str(m.get("copy", "")), remap, f"tier {tier}")))
        saves.setdefault(key, CheckpointSave(key[0], key[1], float(m["written_first"]), float(m["written_last"]),
                                             prev.get("step"), prev.get("written_last"),
                                             str(a.meta.get("provides", [""])[0]), _resume(m.get("resume")),
                                             restored_path=a.identity.split("/", 1)[-1]))
    return [replace(saves[k], copies=tuple(c for _, c in sorted(copies[k], key=lambda rc: rc[0])))
            for k in sorted(saves)]


def _resume(judged) -> str:
    if not isinstance(judged, dict) or not judged.get("verdict"):
        return ""
    missing = judged.get("missing") or []
    return str(judged["verdict"]) + (f": missing {', '.join(map(str, missing))}" if missing else "")


def default_destinations(exporter: "CheckpointsExporter", artifacts: list[Artifact],
                         rewrite: Rewriter) -> list[Destination]:
    roots = [str(getattr(r, "url", r) or "") for r in getattr(exporter.options, "roots", None) or []]
    if len(roots) == 1 and roots[0]:
        found = rewrite("bucket", roots[0])
        if found:
            return [Destination(artifacts, found.new, found.describe())]
    return [Destination(artifacts, None, "none: each DR copy is verified where it is, and the trainer "
                                         "loads it in place", writes_origin=False)]


def rpo_rows(exporter: "CheckpointsExporter", objective: timedelta | None, read_data: bool = False) -> list[RpoRow]:
    from dr.exporters.checkpoints.status import rpo_report

    archive = {t.name for t in exporter.options.effective_tiers() if getattr(t, "milestones_only", False)}
    rows = []
    for row in rpo_report(exporter, read_data=read_data):
        # a damaged copy is a breach in any tier: it is the recovery point, and it would not restore
        breach = bool(row.problems) or (objective is not None and row.tier not in archive
                                         and _lagging(row, objective))
        detail = (f"source step {row.source_step}, DR copy step {row.copy_step}, "
                  f"rpo {_ago(row.rpo_seconds)}")
        if row.problems:
            detail += f"; the DR copy would not restore: {'; '.join(row.problems[:3])}"
        rows.append(RpoRow(f"run {row.run} tier {row.tier}", detail, breach, row.to_json()))
    return rows


def _lagging(row, objective: timedelta) -> bool:
    if row.copy_step is None:
        return row.source_step is not None  # a complete checkpoint exists and none is copied
    if row.rpo_seconds is None:
        return False  # the source has no complete checkpoint left; the copy is what remains
    return row.rpo_seconds > objective.total_seconds()


def _ago(seconds: float | None) -> str:
    return "unknown" if seconds is None else format_duration(timedelta(seconds=int(seconds)))
