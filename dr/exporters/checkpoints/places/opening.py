"""Turn a plan's (or a recorded manifest's) location into a place, ready to use.

One function decides which kind of place a location means, so roots, tiers and restore
targets are opened alike. Every place comes wrapped in RetryingPlace: the copier's calls are
idempotent, and a network filesystem fails transiently as an object store does.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from dr.exporters.checkpoints.options import PlaceSpec
from dr.kits.places.contract import Place
from dr.kits.places.local import LocalPlace
from dr.kits.places.retrying import RetryingPlace
from dr.kits.places.s3 import S3Place, Sessions


def open_place(location: PlaceSpec | dict, base_dir: str = ".", sessions: Sessions | None = None) -> Place:
    """The place a location names; relative directories: relative to `base_dir` (the plan's folder)."""
    loc = location if isinstance(location, PlaceSpec) else PlaceSpec.model_validate(location)
    if loc.is_s3:
        parts = urlsplit(loc.url)
        return RetryingPlace(S3Place(parts.netloc, parts.path.strip("/"), endpoint_url=loc.endpoint_url,
                                     region=loc.region, profile=loc.profile, sessions=sessions))
    return RetryingPlace(LocalPlace(os.path.normpath(os.path.join(base_dir, loc.url))))
