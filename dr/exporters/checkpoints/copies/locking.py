"""One backup at a time copies a source into a DR target (docs/format.md, sections 14 and 19.3).

Backups share the repository's lock (they only add content-addressed objects), but a DR copy
is not content-addressed: a copier deletes what it takes for a stale file before copying it,
replaces a manifest that has no marker, drops the journal once its marker is written, and
retention removes old copies. Two backups of one source working on the same run/step at once
could each undo the other (one deleting a file the other just published under its marker).
So the whole of a tier's work for a source (inventory, copies, retention, sweep, the records)
happens under an exclusive lock kept in the target itself, at `dr-locks/<source>/`, with the
repository's lock algorithm and stale rules (dr.repository.locks). It lives beside `<source>/`,
never under it: a trainer scanning `<target>/<source>` sees nothing new, and the sweep of
files that belong to no copy never judges it. Several sources sharing a target lock apart.

A second backup of the same source waits while the holder is alive (it refreshes every five
minutes): once the holder finishes, the copies it made are complete and the waiter only
records them. A holder that died is stale at once on its own host, after 30 minutes elsewhere.
"""

from __future__ import annotations

import math
from typing import Iterator

from dr.kits.places.contract import Place
from dr.repository.locks import Lock, LockSpace
from dr.repository.stores.base import ObjectMissing

LOCKS = "dr-locks"


class PlaceLockStore:
    """A place seen as the store the lock algorithm needs: list, get, put, delete."""

    def __init__(self, place: Place):
        self.place = place

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        for f in self.place.list_files(prefix.rstrip("/")):
            yield f.path, f.size

    def get(self, key: str) -> bytes:
        data = self.place.get(key)
        if data is None:
            raise ObjectMissing(key)
        return data

    def put(self, key: str, data: bytes) -> None:
        self.place.put(key, data, create_only=True)  # a fresh random key: never taken

    def delete(self, key: str) -> None:
        self.place.delete(key)


def copy_lock(place: Place, source: str, command: str) -> Lock:
    """The held lock on `source`'s copies in `place` (use it in a `with`); waits for a live holder."""
    folder = f"{LOCKS}/{source}"
    where = place.url_of(folder)
    space = LockSpace(PlaceLockStore(place), f"{folder}/", where,
                      unlock_hint=f"if that process is gone delete what is under {where}")
    return Lock(space, exclusive=True, command=command).acquire(math.inf)
