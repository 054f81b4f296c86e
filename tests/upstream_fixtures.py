"""Where the tests find the upstream Kueue, cert-manager and LWS files, and what to say when one is missing.

They are never copied into this repository: scripts/fetch-upstream-fixtures fetches them at their
pinned versions (scripts/upstream-fixtures.sha256) into $DR_UPSTREAM_FIXTURES, by default
../shared/fixtures/upstream beside the checkout. A missing file fails its test, never skips it.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("DR_UPSTREAM_FIXTURES") or PROJECT.parent / "shared" / "fixtures" / "upstream")


def missing(path: Path | str) -> str:
    return (f"upstream fixture missing: {path}; run scripts/fetch-upstream-fixtures to fetch the upstream "
            f"files at their pinned versions into {FIXTURES} (set DR_UPSTREAM_FIXTURES to put them elsewhere)")
