"""Checking DR registry copies by digest: what `dr verify` (and `dr verify --images`) asks of this exporter.

For each recorded copy: the tag (and backup tag) still names the copy's digest; every
recorded manifest is fetched and hashed; every recorded blob is present with its recorded size
(HEAD), or, with read_data, streamed and hashed. Whatever a restore would refuse (a missing
or corrupt manifest or blob, a moved tag) is a problem of that copy.

An image kept in dr's repository (`store: repository|both`) is one more copy: every manifest
and blob its record lists must be an `image-blob` artifact of the same snapshot, with the
recorded size (a record whose blob artifact is missing is a problem naming the image, though
every blob the snapshot does hold is fine); with read_data, each one is read through the
reader as a push reads it and hashed against its digest, so a damaged repository blob is
reported against every image that needs it (`dr verify --read-data` also reads the repository
blob by blob itself: image bytes are read twice there).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from dr.contract import ContentReader, EncryptionError, IntegrityError
from dr.exporters.images import records
from dr.kits.oci.client import RegistryError
from dr.kits.oci.streams import HashingReader
from dr.exporters.images.copying import Endpoint
from dr.exporters.images.options import RegistryURL
from dr.exporters.images.pushing import HERE, RepositoryImages
from dr.exporters.images.storing import BLOB_KIND
from dr.model.artifacts import Artifact

if TYPE_CHECKING:
    from dr.exporters.images.exporter import ImagesExporter


@dataclass
class ImageCheck:
    """One DR copy of one image: `ok` when every recorded digest checked out."""

    item: str  # the artifact's identity (the source reference)
    copy: str  # the DR copy, pinned by digest
    ok: bool
    problems: list[str] = field(default_factory=list)
    manifests: int = 0  # manifests fetched and hashed
    blobs: int = 0  # blobs found (HEAD) or read and hashed
    bytes_read: int = 0
    undecrypted: int = 0  # secret blobs in dr's repository not read: no identity opens them

    def to_json(self) -> dict:
        return asdict(self)


def verify_copies(exporter: "ImagesExporter", artifacts: list[Artifact], reader: ContentReader,
                  read_data: bool = True) -> list[ImageCheck]:
    checks = []
    held = RepositoryImages(artifacts, reader)
    results: dict[str, str] = {}  # digest -> problem ('' when fine): a shared blob is read once
    for artifact in artifacts:
        if artifact.kind == BLOB_KIND:
            continue
        try:
            record = records.load(reader.read(artifact))
        except EncryptionError:  # a secret source and no identity: say what was not checked
            checks.append(ImageCheck(artifact.identity, "not checked: its record is encrypted and no identity "
                                     "was given (--identity)", True, undecrypted=1))
            continue
        except IntegrityError as exc:  # a damaged record: a restore refuses the image, so it is a problem
            checks.append(ImageCheck(artifact.identity, f"{HERE}: its record", False, [f"record: {exc}"]))
            continue
        for copy in record["copies"]:
            checks.append(_check(exporter, artifact.identity, record, copy, read_data))
        if record.get("repository"):
            checks.append(_check_held(held, artifact.identity, record, read_data, results))
    return checks


def _check_held(held: RepositoryImages, item: str, record: dict, read_data: bool,
                results: dict[str, str]) -> ImageCheck:
    check = ImageCheck(item, f"{HERE}: {record['source']}@{record['repository'][0]['digest']}", True)
    check.problems += held.missing(record)
    for digest, size in records.repository_digests(record).items():
        if digest not in held.blobs:
            continue
        if read_data and digest not in results:
            try:
                check.bytes_read += held.check(digest, size)
                results[digest] = ""
            except EncryptionError:  # like dr verify without --identity: checked blob by blob only
                results[digest] = "undecrypted"
            except (RegistryError, IntegrityError) as exc:
                results[digest] = f"{'blob' if size is not None else 'manifest'} {digest}: {exc}"
        if results.get(digest) == "undecrypted":
            check.undecrypted += 1
        elif results.get(digest):
            check.problems.append(results[digest])
        elif size is None:
            check.manifests += 1
        else:
            check.blobs += 1
    check.ok = not check.problems
    return check


def _check(exporter: "ImagesExporter", item: str, record: dict, copy: dict, read_data: bool) -> ImageCheck:
    url = RegistryURL(copy["registry"])
    dst = Endpoint(exporter.connections.get(url.host, url.scheme), copy["repository"][len(url.host) + 1:])
    check = ImageCheck(item, copy["pinned"], True)
    try:
        _tags(dst, record, copy, check)
        for digest in dict.fromkeys([*record["manifests"], copy["dr_digest"],
                                     *(a["digest"] for a in record.get("attached") or [])]):
            _manifest(dst, digest, check)
        for digest, size in sorted(record["blobs"].items()):
            _blob(dst, digest, size, read_data, check)
    except RegistryError as exc:  # the registry stopped answering: the rest cannot be checked
        check.problems.append(str(exc))
    check.ok = not check.problems
    return check


def _tags(dst: Endpoint, record: dict, copy: dict, check: ImageCheck) -> None:
    for tag in filter(None, (record.get("tag"), copy.get("backup_tag"))):
        found = dst.registry.head_manifest(dst.path, tag)
        if found is None or found[0] != copy["dr_digest"]:
            check.problems.append(f"{dst.name}:{tag} names {found[0] if found else 'nothing'}, "
                                  f"not {copy['dr_digest']}")


def _manifest(dst: Endpoint, digest: str, check: ImageCheck) -> None:
    try:
        dst.registry.get_manifest(dst.path, digest)  # hashed against the digest
        check.manifests += 1
    except RegistryError as exc:
        check.problems.append(f"manifest {digest}: {exc}")


def _blob(dst: Endpoint, digest: str, size: int, read_data: bool, check: ImageCheck) -> None:
    name = f"{dst.name}@{digest}"
    if not read_data:
        found = dst.registry.has_blob(dst.path, digest)
        if found is None:
            check.problems.append(f"blob {name}: missing")
        elif found != size:
            check.problems.append(f"blob {name}: {found} bytes, recorded {size}")
        else:
            check.blobs += 1
        return
    try:
        response = dst.registry.open_blob(dst.path, digest)
        try:
            body = HashingReader(response.raw, digest, size, name)
            while body.read(1 << 20):
                pass
            body.finish()
        finally:
            response.close()
        check.blobs += 1
        check.bytes_read += size
    except RegistryError as exc:
        check.problems.append(f"blob {name}: {exc}")
