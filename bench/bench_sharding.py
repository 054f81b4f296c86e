"""Benchmark: one checkpoint's DR copy across endpoints, unsharded and with 2 and 4 local shards.

The source bucket is on one moto server, the DR bucket on another (two failure domains, as
bench_checkpoints.py). The checkpoint is a real DCP save (--files .distcp files plus
.metadata) of --size-mib. Each round runs `dr backup` with the checkpoints source's `shards`
option at each count (1: unsharded, the copy in the backup process; N: N shard processes of
`python -m dr.exporters.checkpoints.sharding` started by the local executor), and the peer,
`rclone copy --checksum` (one process, its defaults), on the same data; the target is emptied
after each run. Printed: median seconds per count, the speed-up over unsharded, the ratio to
rclone, and the backup process's peak RSS (the coordinator's; each shard is a process of its
own with its own budget, max_buffer_mib).

What it shows on a small host: both moto servers, the coordinator and every shard share the
same cores, so the scaling flattens once the servers' Python (which hashes and stores every
byte) saturates them; on a cluster each shard is a pod with its own CPU and network, and the
servers are S3 (docs/benchmarks.md).

Run: .venv/bin/python bench/bench_sharding.py [--size-mib 1024] [--files 8] [--counts 1,2,4] [--rounds 1]
Needs: rclone (apt), moto, torch (the test extra); disk for the checkpoint three times over.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_checkpoints import CKPT, PLAN, Bench, empty, keys, make_checkpoint, upload  # noqa: E402
from bench.common import measure, median  # noqa: E402
from tests.servers import moto_server  # noqa: E402

SHARDS = "    shards: {{count: {count}, min_bytes: 0}}\n"


def dr_sharded(bench: Bench, count: int, tag: str) -> dict:
    plan = os.path.join(bench.work, f"plan-{tag}.yaml")
    text = PLAN.format(repo=os.path.join(bench.work, f"repo-{tag}"), src="src", src_endpoint=bench.a, dst="dst",
                       prefix=tag, dst_endpoint=bench.b)
    with open(plan, "w") as handle:
        handle.write(text + (SHARDS.format(count=count) if count > 1 else ""))
    run = measure([bench.dr, "backup", "--plan", plan, "--quiet"], env=bench.env)
    copied = keys(bench.s3[bench.b], "dst", f"{tag}/ckpts/bench/step-1/")
    assert "DR-COMPLETE" in copied and not any("dr-shards" in k for k in copied), sorted(copied)
    empty(bench.s3[bench.b], "dst", f"{tag}/")
    return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--files", type=int, default=8, help="DCP writer threads: one .distcp file each")
    parser.add_argument("--counts", default="1,2,4")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    work = tempfile.mkdtemp(prefix="dr-bench-shards-")
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
    os.environ.update({k: env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")})
    try:
        with moto_server() as a, moto_server() as b:
            bench = Bench(work, f"http://127.0.0.1:{a.port}", f"http://127.0.0.1:{b.port}", env)
            bench.s3[bench.a].create_bucket(Bucket="src")
            bench.s3[bench.b].create_bucket(Bucket="dst")
            local = os.path.join(work, "ckpt")
            size = make_checkpoint(local, args.size_mib << 20, args.files)
            upload(bench.s3[bench.a], local, "src", CKPT)
            shutil.rmtree(local)
            files = len(keys(bench.s3[bench.a], "src", f"{CKPT}/"))
            results: dict[str, list[dict]] = {}
            for r in range(args.rounds):
                for count in counts if r % 2 == 0 else list(reversed(counts)):
                    results.setdefault(str(count), []).append(dr_sharded(bench, count, f"r{r}-{count}"))
                results.setdefault("rclone", []).append(bench.rclone(f"r{r}-rclone", files))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = summarize(results, size, files, counts)
    print(json.dumps(summary, indent=2) if args.json else report(summary))


def summarize(results: dict[str, list[dict]], size: int, files: int, counts: list[int]) -> dict:
    med = {k: median([r["seconds"] for r in v]) for k, v in results.items()}
    rss = {k: max(r["rss_mb"] for r in v) for k, v in results.items()}
    base = med[str(counts[0])]
    rows = [{"shards": c, "seconds": med[str(c)], "mib_per_s": size / (1 << 20) / med[str(c)],
             "speedup": base / med[str(c)], "vs_rclone": med[str(c)] / med["rclone"], "rss_mb": rss[str(c)]}
            for c in counts]
    return {"bytes": size, "files": files, "rounds": len(results["rclone"]), "rows": rows,
            "rclone": {"seconds": med["rclone"], "rss_mb": rss["rclone"]}}


def report(s: dict) -> str:
    lines = [f"checkpoint: {s['bytes'] / (1 << 20):.0f} MiB in {s['files']} files, across two moto servers, "
             f"median of {s['rounds']} round(s)",
             f"{'shards':>6} {'seconds':>8} {'MiB/s':>7} {'speed-up':>8} {'dr/rclone':>9} {'RSS MiB':>8}"]
    for row in s["rows"]:
        lines.append(f"{row['shards']:>6} {row['seconds']:>8.1f} {row['mib_per_s']:>7.1f} {row['speedup']:>8.2f} "
                     f"{row['vs_rclone']:>9.2f} {row['rss_mb']:>8.0f}")
    lines.append(f"rclone copy --checksum: {s['rclone']['seconds']:.1f} s, {s['rclone']['rss_mb']:.0f} MiB RSS")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
