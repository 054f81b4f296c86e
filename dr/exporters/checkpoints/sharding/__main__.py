"""`python -m dr.exporters.checkpoints.sharding --pointer FILE`: one shard (shard.py).

Exit codes: 0 the share is copied and its result written; 1 the copy failed (the executor
retries the index; the journal keeps what was done); 2 the shard cannot start (no index, no
task: retrying will not help). One line on stderr says why; DR_DEBUG=1 adds the traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from dr.exporters.checkpoints.sharding.shard import ShardError, read_pointer, run_shard, shard_index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dr.exporters.checkpoints.sharding",
                                     description="copy one shard of a checkpoint DR copy")
    parser.add_argument("--pointer", required=True, help="JSON file: {copy: location, task: key}")
    args = parser.parse_args(argv)
    try:
        copy, key = read_pointer(args.pointer)
        run_shard(copy, key, shard_index(), log=lambda m: print(m, flush=True))
    except (ShardError, ValueError) as exc:
        print(f"dr shard: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the executor reports this line as the index's reason
        if os.environ.get("DR_DEBUG"):
            traceback.print_exc()
        print(f"dr shard: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
