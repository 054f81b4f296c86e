"""Checking a DR copy's bytes against its manifest, naming every file that does not match.

Why separate from copying: verification is what restore does before writing anything where a
trainer will look, what `dr status`/`verify` style commands do on a schedule (a copy that rots
silently is found before the day it is needed), and what "load in place" needs first. It reads
each file once, as one stream, several files at a time, in bounded memory.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from dr.exporters.checkpoints.copies.layout import CopyState, Layout, read_copy
from dr.kits.places.contract import Place
from dr.exporters.checkpoints.transfer.transferring import hash_file


@dataclass
class CopyCheck:
    """The verdict on one copy: ok exactly when problems is empty."""

    url: str
    run: str = ""
    step: int = -1
    files: int = 0
    bytes: int = 0
    read_data: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {"url": self.url, "run": self.run, "step": self.step, "files": self.files, "bytes": self.bytes,
                "read_data": self.read_data, "ok": self.ok, "problems": self.problems}


def check_copy(place: Place, layout: Layout, *, read_data: bool = True, expect_manifest: str = "",
               parallel: int = 4) -> tuple[CopyState, CopyCheck]:
    """Marker and manifest; every file present with its size; with read_data, every SHA-256."""
    state = read_copy(place, layout, expect_manifest)
    check = CopyCheck(place.url_of(layout.key), read_data=read_data)
    if not state.complete:
        check.problems.append(state.problem)
        return state, check
    ck = state.manifest.get("checkpoint", {})
    check.run, check.step = ck.get("run", ""), int(ck.get("step", -1))
    files = state.files()
    check.files, check.bytes = len(files), sum(f["size"] for f in files)
    check.problems += size_problems(place, layout, files)
    if read_data and not check.problems:
        check.problems += digest_problems(place, layout, files, parallel)
    return state, check


def size_problems(place: Place, layout: Layout, files: list[dict]) -> list[str]:
    """One listing: every file present with the manifest's size (this also primes the S3
    place's ETags, so the reads that follow are pinned to the objects listed)."""
    listed = {f.path: f for f in place.list_files(layout.base)}
    problems = []
    for f in files:
        got = listed.get(layout.file(f["path"]))
        if got is None:
            problems.append(f"{f['path']}: missing from the DR copy")
        elif got.size != f["size"]:
            problems.append(f"{f['path']}: {got.size} bytes, the manifest says {f['size']} "
                            "(truncated or tampered)")
    return problems


def digest_problems(place: Place, layout: Layout, files: list[dict], parallel: int = 4) -> list[str]:
    def one(f: dict) -> str:
        try:
            sha, size = hash_file(place, layout.file(f["path"]))
        except OSError as exc:
            return f"{f['path']}: unreadable ({exc})"
        if sha != f["sha256"] or size != f["size"]:
            return f"{f['path']}: SHA-256 does not match the manifest (corrupt or tampered)"
        return ""

    with ThreadPoolExecutor(parallel, thread_name_prefix="dr-verify") as pool:
        return [p for p in pool.map(one, sorted(files, key=lambda f: -f["size"])) if p]
