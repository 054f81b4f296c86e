"""What the catalog keeps of one copied image: a small JSON record, its meta and dependencies.

The record (the artifact's content, `dr-image-copy/1`):

    {"format": "dr-image-copy/1",
     "source": "reg.local:5000/team/app:1.0",      # the tag as resolved (no digest)
     "tag": "1.0", "digest": "sha256:...",            # what the tag named when copied
     "media_type": "...", "platforms": ["linux/amd64", ...],
     "manifests": ["sha256:..."], "blobs": {"sha256:...": size},
     "attached": [{"tag": "sha256-<hex>.sig", "digest": ..., "via": "cosign-tag"} |
                  {"digest": ..., "via": "referrers", "artifact_type": ...}],
     "copies": [{"registry": "https://dr.example/mirror",
                 "repository": "dr.example/mirror/reg.local-5000/team/app",
                 "reference": "dr.example/mirror/reg.local-5000/team/app:1.0",
                 "pinned": "dr.example/mirror/reg.local-5000/team/app@sha256:...",
                 "backup_tag": "dr-<digest12>", "dr_digest": "sha256:..."}]}

With `store: repository` or `both`, the record also lists what dr's repository holds, each tree
in push order (the image first, then its cosign tags and referrers); every manifest and blob
digest there is an `image-blob` artifact of the same snapshot (storing.py):

     "repository": [{"digest": "sha256:...", "via": "image"|"cosign-tag"|"referrers",
                     "tags": ["sha256-<hex>.sig"], "manifests": [["sha256:...", "<media type>"], ...],
                     "blobs": {"sha256:...": size}}]

`copies` is then empty with `store: repository`.
`dr_digest` differs from `digest` only under a platform filter (the index is then ours).
Meta: `provides` (every spelling of the source reference: the audit judges those images
"remapped"), `provides_at` (spelling -> the first copy, pinned by digest: what a workload's
image becomes in a whole-plan restore), `digest`, `tag`, `resolved_at`, `copies`, `bytes`.
`provides_at` is left out when no registry holds a copy (the place is known only when a restore
pushes it). Dependencies: one `registry` per DR registry holding a copy (a DR registry inside
the failed domain is a finding); none for an image held only in the repository. The change
token is the digest, the copies and the repository trees' digests: an unchanged image is
reused without reading its record again.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

from dr.exporters.images.copying import Copied, Endpoint
from dr.exporters.images.references import ImageRef, backup_tag
from dr.model.artifacts import Dependency

if TYPE_CHECKING:
    from dr.exporters.images.exporter import ImagesExporter
    from dr.exporters.images.storing import Stored
    from dr.exporters.images.exporting import Wanted

FORMAT = "dr-image-copy/1"


def _source(ref: ImageRef) -> str:
    return ref.repository + (f":{ref.tag}" if ref.tag else "")


def _copy(ref: ImageRef, url, dst: Endpoint, copied: Copied) -> dict:
    return {"registry": url.url, "repository": dst.name,
            "reference": f"{dst.name}:{ref.tag}" if ref.tag else f"{dst.name}@{copied.dr_digest}",
            "pinned": f"{dst.name}@{copied.dr_digest}", "backup_tag": backup_tag(ref.digest),
            "dr_digest": copied.dr_digest}


def summary(ref: ImageRef, copies: list, stored: "Stored | None" = None) -> dict:
    """The facts that decide whether the record changed (its change token's input)."""
    attached = sorted({a["digest"] for _, _, c in copies for a in c.attached})
    facts = {"source": _source(ref), "digest": ref.digest,
             "copies": [_copy(ref, url, dst, copied) for url, dst, copied in copies], "attached": attached}
    if stored is not None:  # a tree's digest names every manifest and blob in it
        facts["repository"] = [t.digest for t in stored.trees]
    return facts


def change_token(summary_: dict, platforms: list[str]) -> str:
    text = json.dumps({**summary_, "platforms": sorted(platforms)}, sort_keys=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def content(exporter: "ImagesExporter", ref: ImageRef, copies: list, stored: "Stored | None" = None) -> bytes:
    image = _from_stored(stored) if stored is not None else _from_copy(exporter, copies[0][1], copies[0][2])
    attached = {a["digest"]: a for _, _, c in copies for a in c.attached}
    for tree in stored.trees[1:] if stored is not None else []:
        attached.setdefault(tree.digest, {**({"tag": tree.tags[0]} if tree.tags else {}), "digest": tree.digest,
                                          "via": tree.via})
    record = {"format": FORMAT, "source": _source(ref), "tag": ref.tag, "digest": ref.digest, **image,
              "attached": sorted(attached.values(), key=lambda a: a["digest"]),
              "copies": [_copy(ref, u, d, c) for u, d, c in copies]}
    if stored is not None:
        record["repository"] = [t.to_json() for t in stored.trees]
    return json.dumps(record, sort_keys=True, indent=1).encode() + b"\n"


def _from_copy(exporter: "ImagesExporter", dst: Endpoint, copied: Copied) -> dict:
    if copied.unchanged:  # the copy was there already: read its tree back (manifests only)
        tree = exporter.copier_for_reading().read_tree(dst, copied.dr_digest, filter_platforms=False)
        copied.manifests = [m.digest for m in tree.manifests()]
        copied.blobs = dict(tree.blobs)
        copied.platforms = tree.platforms
        copied.media_type = tree.top.media_type
    return {"media_type": copied.media_type, "platforms": copied.platforms, "manifests": copied.manifests,
            "blobs": copied.blobs}


def _from_stored(stored: "Stored") -> dict:
    tree = stored.image
    return {"media_type": tree.top.media_type, "platforms": tree.platforms,
            "manifests": [m.digest for m in tree.manifests()], "blobs": dict(tree.blobs)}


def meta(item: "Wanted", ref: ImageRef, resolved_at: str, copies: list, stored: "Stored | None" = None) -> dict:
    pinned = {s: f"{copies[0][1].name}@{copies[0][2].dr_digest}" for s in item.spellings} if copies else {}
    blobs = stored.image.blobs if stored is not None else (copies[0][2].blobs if copies else {})
    return {"provides": list(item.spellings), **({"provides_at": pinned} if pinned else {}),
            "digest": ref.digest, "tag": ref.tag or "", "resolved_at": resolved_at,
            "copies": [f"{d.name}@{c.dr_digest}" for _, d, c in copies],
            **({"stored": "repository", "dr_digest": stored.image.top.digest} if stored is not None else {}),
            "why": item.why[:5],
            # the image's size, known only when it was copied now: an unchanged image was not
            # read, and a reused artifact keeps the size its copy recorded
            **({"bytes": sum(blobs.values())} if blobs else {})}


def dependencies(ref: ImageRef, copies: list) -> list[Dependency]:
    return [Dependency("registry", url.url, f"DR copy of {_source(ref)}") for url, _, _ in copies]


def load(data: bytes) -> dict:
    record = json.loads(data)
    if record.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} record: {record.get('format')!r}")
    return record


def repository_digests(record: dict) -> dict[str, int | None]:
    """Every digest the record's repository trees name -> its size (None for a manifest)."""
    found: dict[str, int | None] = {}
    for tree in record.get("repository") or []:
        found.update({digest: None for digest, _ in tree["manifests"]})
        found.update(tree["blobs"])
    return found
