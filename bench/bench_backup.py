"""Benchmark: dr backup vs restic backup, same ~1 GiB directory, same moto S3 endpoint.

Prints, for each tool: first backup time, unchanged second backup time and its CPU time
(user + system: on a loaded machine wall time is mostly a share of the cores, the CPU time is
the work), bytes uploaded by each, and peak RSS. With --history N, each tool first takes N more
backups in which only a tiny file of its own changed (an hourly CronJob's week is 168), so the
unchanged backup is measured against a repository that keeps N+1 snapshots; each tool keeps
its local cache between its runs (restic's cache folder, dr's manifest cache).
Run: .venv/bin/python bench/bench_backup.py [--size-mib 1024] [--rounds 3] [--history 0]
Needs: restic (apt), moto server (the test extras). Everything runs on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import boto3  # noqa: E402

from bench.common import measure, median  # noqa: E402
from tests.servers import moto_server  # noqa: E402

SIZES = [1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]


def make_tree(root: str, total: int, seed: int = 7) -> tuple[int, int]:
    """Files from 1 KiB to 64 MiB (log-spread sizes) until `total` bytes; random content."""
    rng = random.Random(seed)
    written = files = 0
    while written < total:
        size = min(rng.choice(SIZES), total - written) or 1
        path = os.path.join(root, f"d{files % 16:02d}", f"f{files:05d}.bin")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(rng.randbytes(size))
        written += size
        files += 1
    return files, written


def bucket_bytes(s3, bucket: str) -> int:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return sum(o["Size"] for page in pages for o in page.get("Contents", []))


PLAN = """version: 1
name: bench
failure_domains:
  - {{name: site-a, kind: region}}
  - {{name: site-b, kind: region}}
protects_against: [site-a]
targets:
  - {{name: s3, url: "s3://{bucket}/repo", domain: site-b, endpoint_url: "{endpoint}", region: us-east-1}}
sources:
  - {{name: data, type: files, paths: ["{data}", "{churn}"]}}
"""


def churned(work: str, name: str) -> tuple[str, Callable[[int], None]]:
    """A folder of one tiny file that only this tool backs up, and a function changing it."""
    folder = os.path.join(work, f"churn-{name}")
    os.makedirs(folder, exist_ok=True)

    def change(n: int) -> None:
        with open(os.path.join(folder, "hour.txt"), "w") as handle:
            handle.write(f"backup {n}\n")
    change(0)
    return folder, change


def history(argv: list[str], change: Callable[[int], None], count: int, env: dict) -> None:
    for n in range(1, count + 1):
        change(n)
        subprocess.run(argv, env=env, check=True, capture_output=True)


def run_dr(work: str, endpoint: str, s3, data: str, env: dict, past: int = 0) -> dict:
    bucket = "bench-dr-" + os.urandom(4).hex()
    s3.create_bucket(Bucket=bucket)
    plan = os.path.join(work, f"{bucket}.yaml")
    churn, change = churned(work, bucket)
    with open(plan, "w") as handle:
        handle.write(PLAN.format(bucket=bucket, endpoint=endpoint, data=data, churn=churn))
    dr = os.path.join(os.path.dirname(sys.executable), "dr")
    env = {**env, "DR_CACHE_DIR": os.path.join(work, f"cache-{bucket}")}
    first = measure([dr, "backup", "--plan", plan, "--json", "--quiet"], env=env)
    history([dr, "backup", "--plan", plan, "--quiet"], change, past, env)
    after_first = bucket_bytes(s3, bucket)
    second = measure([dr, "backup", "--plan", plan, "--json", "--quiet"], env=env)
    stats = json.loads(second.stdout)["results"][0]["stats"]
    return {"first_s": first.seconds, "second_s": second.seconds, "second_cpu_s": second.cpu_seconds,
            "first_rss_mb": first.peak_rss_mb, "second_rss_mb": second.peak_rss_mb, "uploaded_first": after_first,
            "uploaded_second_data": stats["bytes_uploaded"],
            "uploaded_second_total": bucket_bytes(s3, bucket) - after_first}


def run_restic(work: str, endpoint: str, s3, data: str, env: dict, past: int = 0) -> dict:
    bucket = "bench-restic-" + os.urandom(4).hex()
    s3.create_bucket(Bucket=bucket)
    env = {**env, "RESTIC_REPOSITORY": f"s3:{endpoint}/{bucket}/repo", "RESTIC_PASSWORD": "bench",
           "RESTIC_CACHE_DIR": os.path.join(work, f"cache-{bucket}")}
    subprocess.run(["restic", "init"], env=env, check=True, capture_output=True)
    before = bucket_bytes(s3, bucket)
    churn, change = churned(work, bucket)
    first = measure(["restic", "backup", "--json", "-q", data, churn], env=env)
    history(["restic", "backup", "-q", data, churn], change, past, env)
    after_first = bucket_bytes(s3, bucket)
    second = measure(["restic", "backup", "--json", data, churn], env=env)
    summary = [json.loads(l) for l in second.stdout.splitlines() if '"summary"' in l][-1]
    return {"first_s": first.seconds, "second_s": second.seconds, "second_cpu_s": second.cpu_seconds,
            "first_rss_mb": first.peak_rss_mb, "second_rss_mb": second.peak_rss_mb,
            "uploaded_first": after_first - before,
            "uploaded_second_data": summary.get("data_added", 0),
            "uploaded_second_total": bucket_bytes(s3, bucket) - after_first}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--history", type=int, default=0, metavar="N",
                        help="N more backups (a tiny file changed) before the unchanged one")
    args = parser.parse_args()
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
           "AWS_DEFAULT_REGION": "us-east-1"}
    for name in ("AWS_CA_BUNDLE", "AWS_PROFILE"):
        env.pop(name, None)
    os.environ.update({k: env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")})
    compile_dr()
    work = tempfile.mkdtemp(prefix="dr-bench-")
    try:
        data = os.path.join(work, "data")
        files, total = make_tree(data, args.size_mib << 20)
        print(f"data: {files} files, {total / 2**20:.0f} MiB (1 KiB to 64 MiB); history: {args.history} "
              f"backups before the unchanged one; load {os.getloadavg()}", flush=True)
        results: dict[str, list[dict]] = {"dr": [], "restic": []}
        with moto_server() as server:
            endpoint = f"http://127.0.0.1:{server.port}"
            s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
            for round_no in range(args.rounds):
                # alternate the order so neither tool always gets the warm page cache
                order = [("dr", run_dr), ("restic", run_restic)]
                for name, run in order if round_no % 2 == 0 else reversed(order):
                    results[name].append(run(work, endpoint, s3, data, env, args.history))
                    print(f"round {round_no + 1} {name}: {results[name][-1]}", flush=True)
        report(results)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compile_dr() -> None:
    """Write dr's bytecode, as `pip install` does for the image (Dockerfile). A checkout installed
    editable, under PYTHONDONTWRITEBYTECODE=1 (set on these machines, and in the image), would
    otherwise compile every dr module it imports from source on every run: ~55 modules, a
    cost no installed dr pays."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(root, "dr")], check=True)


def report(results: dict[str, list[dict]]) -> None:
    keys = ["first_s", "second_s", "second_cpu_s", "first_rss_mb", "second_rss_mb", "uploaded_first",
            "uploaded_second_data", "uploaded_second_total"]
    med = {tool: {k: median([r[k] for r in runs]) for k in keys} for tool, runs in results.items()}
    print("\nmedians:")
    print(f"{'':24}{'dr':>14}{'restic':>14}{'dr/restic':>12}")
    for key in keys:
        d, r = med["dr"][key], med["restic"][key]
        ratio = f"{d / r:.2f}" if r else "-"
        print(f"{key:24}{d:>14.2f}{r:>14.2f}{ratio:>12}")
    print(f"\ndr second/first time: {med['dr']['second_s'] / med['dr']['first_s']:.3f}")


if __name__ == "__main__":
    main()
