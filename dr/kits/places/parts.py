"""How a file of a given size is cut into parts for a place's writer (S3's limits, measured costs).

In the kit, for every copier that writes through the place contract: the checkpoint copier
(dr/exporters/checkpoints/transfer/) and the MLflow weight copies (streaming.py).
"""

from __future__ import annotations

MAX_PARTS = 10_000  # S3's limit per multipart upload
SINGLE_PUT_MAX = 96 << 20  # files up to this go as one PUT (when two fit the buffer budget)
PART = 16 << 20  # the part size of larger files (more when S3's MAX_PARTS needs it)
MIB = 1 << 20


def part_size_for(size: int, budget: int, fixed: int | None = None) -> int:
    """The part size a file of `size` bytes is copied in; a part size >= the file's size means
    one PUT. A multipart upload costs the server more than one PUT of the same bytes (it
    stores every part, then assembles them at completion), so:
    - up to SINGLE_PUT_MAX, and half the budget (two such files stream at once): one PUT;
    - above: parts of PART (the pool then keeps budget // PART uploads in flight, spread
      over however few files there are), in whole MiB;
    - never more than S3's MAX_PARTS parts.
    `fixed` (the plan's part_size_mib) replaces the choice, bounded by MAX_PARTS only."""
    floor = -(-size // MAX_PARTS)
    if fixed:
        return max(fixed, floor)
    if size <= min(SINGLE_PUT_MAX, budget // 2):
        return max(size, 1)
    return -(-max(PART, floor) // MIB) * MIB
