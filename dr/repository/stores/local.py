"""A repository in a local directory: the embedded default, and any mounted filesystem.

A directory place (dr/kits/places/local.py) with the staging directory tmp/, seen through
PlaceStore (placing.py). Atomic, write-once put: the data is written and fsynced under tmp/,
then hard-linked to its final name. link(2) fails if the name exists, so a put never replaces
an object, and a crash leaves at most an orphan under tmp/ (never listed; removed by prune's
clear_staging), never a partial object. The layout is docs/format.md's: objects at their keys,
tmp/ for staging only.
"""

from __future__ import annotations

import os

from dr.kits.places.local import LocalPlace
from dr.repository.stores.placing import PlaceStore

TMP_DIR = "tmp"


class LocalStore(PlaceStore):
    def __init__(self, root: str):
        # Nothing is created until the first put: a read-only command (dr snapshots, verify,
        # status) pointed at a missing directory says there is no repository and leaves no trace.
        self.root = os.path.abspath(root)
        super().__init__(LocalPlace(self.root, staging=TMP_DIR), f"file://{self.root}", stages=True)
