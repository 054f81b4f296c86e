"""Small files stored together: one `volume-files` artifact holds the bytes of up to PACK_FILES
files of one directory, one after another, and its meta lists each file's facts.

Why: a file as its own artifact costs an age encryption (an X25519 key agreement), a sealed
name, a blob and a catalog line, about 0.6 ms in all; a volume of 100,000 small files spent
most of its backup on that (restic packs small files too). A pack pays it once.

Which files go together is decided by their names alone, so that a pack an unchanged
directory held is the same pack next time, and a file added or removed changes only its own
pack: files below the threshold, in listing order, grouped by directory; a pack ends after a
file whose path's hash is 0 modulo BOUNDARY (BOUNDARY files on average), when the next file
would take it past PACK_BYTES, or at PACK_FILES files. Its change token is the digest of its
members' paths and tokens: one member changed, the pack is read and stored again (at most
PACK_BYTES).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from dr.exporters.volumes.movertree import safe_parts
from dr.exporters.volumes.wire import Entry, WireError

PACK_KIND = "volume-files"
PACK_BYTES = 4 << 20  # a pack's content: one chunk, read ahead whole on restore
PACK_FILES = 1024  # bounds a pack's catalog line (a member's facts: ~100 bytes)
BOUNDARY = 64


@dataclass
class Pack:
    members: list[Entry]

    @property
    def path(self) -> str:
        """What names the pack in its identity: its first file's path (unique: packs do not overlap)."""
        return self.members[0].path

    @property
    def size(self) -> int:
        return sum(e.size for e in self.members)


def change_token(members: list[Entry]) -> str:
    digest = hashlib.sha256()
    for entry in members:
        digest.update(f"{entry.path}\0{entry.change_token}\n".encode())
    return "pack:" + digest.hexdigest()


def packs_of(entries: list[Entry], below: int) -> tuple[list[Entry | Pack], int]:
    """The entries in listing order, each file under `below` bytes folded into its pack (the pack
    at its first file's place); and how many packs. below=0: no packs."""
    units: list[Entry | Pack] = []
    open_packs: dict[str, Pack] = {}  # directory -> its pack being filled
    count = 0
    for entry in entries:
        if entry.kind != "file" or entry.size >= below:
            units.append(entry)
            continue
        folder = entry.path.rpartition("/")[0]
        pack = open_packs.get(folder)
        if pack is not None and (pack.size + entry.size > PACK_BYTES or len(pack.members) >= PACK_FILES):
            pack = None
        if pack is None:
            pack = open_packs[folder] = Pack([])
            units.append(pack)
            count += 1
        pack.members.append(entry)
        if _ends_pack(entry.path):
            open_packs.pop(folder)
    return units, count


def _ends_pack(path: str) -> bool:
    return int.from_bytes(hashlib.sha256(path.encode()).digest()[:4], "big") % BOUNDARY == 0


def facts(entry: Entry) -> list:
    """A member's line in the pack's `files`: [path, mode (octal), uid, gid, mtime_ns, size, sparse]."""
    return [entry.path, f"{entry.mode:04o}", entry.uid, entry.gid, entry.mtime_ns, entry.size, entry.sparse]


def members_of(identity: str, meta: dict | None, size: int) -> list[Entry]:
    """The files a pack's catalog line records; WireError when they are damaged or hostile (a
    path that leaves the volume, sizes that do not add up to the pack's)."""
    files = (meta or {}).get("files")
    if not isinstance(files, list) or not files or len(files) > PACK_FILES:
        raise WireError(f"{identity}: a pack without its list of files (or more than {PACK_FILES})")
    members = []
    for item in files:
        try:
            path, mode, uid, gid, mtime_ns, length, sparse = item
            entry = Entry(str(path), "file", int(str(mode), 8), int(uid), int(gid), int(mtime_ns), int(length),
                          sparse=bool(sparse))
        except (TypeError, ValueError) as exc:
            raise WireError(f"{identity}: a pack's file facts are unusable: {exc}") from None
        try:
            safe_parts(entry.path)
        except WireError as exc:
            raise WireError(f"{identity}: {exc}") from None
        if not entry.path or entry.path == "." or not 0 <= entry.mode <= 0o7777 or entry.size < 0:
            raise WireError(f"{identity}: a pack's file facts are unusable ({str(item)[:200]})")
        members.append(entry)
    if sum(e.size for e in members) != size:
        raise WireError(f"{identity}: a pack's files add up to {sum(e.size for e in members)} bytes, "
                        f"its content is {size}")
    return members


def split(data: bytes, members: list[Entry]) -> list[memoryview]:
    """The pack's content cut into its files' bytes (members_of checked that the sizes add up)."""
    view, pieces, at = memoryview(data), [], 0
    for entry in members:
        pieces.append(view[at:at + entry.size])
        at += entry.size
    return pieces
