"""Benchmark: DR copies of a real DCP checkpoint, dr vs the usual S3 copiers, on the same data.

1. across endpoints (source on one moto server, target on another: two failure domains):
   `dr backup` (checkpoints exporter, streamed copy with SHA-256) vs `rclone copy --checksum`;
2. one endpoint: dr's server-side copy (CopyObject with SHA-256) vs `s5cmd cp 's3://src/*' s3://dst/`,
   and, in the same rounds, the floor of any copier on that server: boto3 CopyObject of the same
   files, 8 at a time, plain (what s5cmd asks) and with ChecksumAlgorithm=SHA256 (what dr asks:
   the copy's SHA-256 without its bytes passing through the client). moto computes that
   checksum in Python on the machine's own cores; real S3 computes it inside the service.
   The peer that asks for the same SHA-256 is the AWS CLI: `aws s3 cp --recursive
   --checksum-algorithm SHA256`, run twice: with its defaults (multipart copies of 8 MiB
   parts above 8 MiB) and with `multipart_threshold = 5GB`, so that it sends the same
   CopyObject requests as dr. It is NOT a dependency of dr or of its tests: install it from
   PyPI for the bench only, into a venv of its own (its botocore pin would change dr's):
       python3 -m venv bench/out/awscli-venv && bench/out/awscli-venv/bin/pip install awscli
   (an `aws` on PATH is used otherwise); without it those two rows are skipped, saying so;
3. dr's peak RSS (os.wait4 of the `dr backup` child) copying the --size-gib checkpoint and,
   unless --big-gib 0, a second one of --big-gib.
4. --shard-mb 64,256,1024: across endpoints only, dr vs `rclone copy --checksum` at each shard
   size in turn (a checkpoint of --total-mb in shards of that size, at least one shard), each
   size printing dr's and rclone's median seconds, their ratio and dr's peak RSS, and the
   median CPU seconds of the tool and of each moto server per run (where the time goes: on
   shared cores the run that costs the machine less CPU finishes first). dr picks its part
   size per file (one PUT up to half its 144 MiB budget, larger files in 16 MiB parts);
   rclone with its defaults does one PUT below 200 MiB and 5 MiB multipart chunks above.

The checkpoint is written by torch.distributed.checkpoint (FileSystemWriter, --shards threads:
one .distcp file per thread, plus .metadata) from random tensors, then uploaded to the source
bucket. Every tool runs with its defaults. Rounds alternate the order of the tools; the target
is emptied after each run. Medians and dr/peer ratios are printed at the end (JSON with --json).

Run: .venv/bin/python bench/bench_checkpoints.py [--size-gib 2] [--big-gib 8] [--rounds 3] [--one-endpoint]
     .venv/bin/python bench/bench_checkpoints.py --shard-mb 64,256,1024 --total-mb 512 [--rounds 3]
Needs: rclone (apt), s5cmd (the test extra), moto; disk for the checkpoint three times over
(local staging, source server, target server: see `df -h /tmp`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import boto3  # noqa: E402
from boto3.s3.transfer import TransferConfig  # noqa: E402

from bench.common import measure, median  # noqa: E402
from tests.servers import moto_server  # noqa: E402

CKPT = "runs/bench/step-1"
PLAN = """version: 1
name: bench-ckpt
failure_domains:
  - {{name: site-a, kind: region}}
  - {{name: site-b, kind: region}}
protects_against: [site-a]
targets:
  - {{name: repo, url: "{repo}", domain: site-b}}
sources:
  - name: ckpts
    type: checkpoints
    roots: [{{url: "s3://{src}/runs", endpoint_url: "{src_endpoint}"}}]
    dr_copy: {{url: "s3://{dst}/{prefix}", endpoint_url: "{dst_endpoint}"}}
    settle_seconds: 0
"""


def make_checkpoint(path: str, total: int, shards: int) -> int:
    """A real DCP save of random float32 tensors: `shards` writer threads, one file each."""
    import torch
    import torch.distributed.checkpoint as dcp

    count = shards * 8
    per = total // count // 4
    state = {f"layers.{i}.weight": torch.rand(per) for i in range(count)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save(state, storage_writer=dcp.FileSystemWriter(path, thread_count=shards))
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def upload(s3, local: str, bucket: str, prefix: str) -> None:
    config = TransferConfig(max_concurrency=8, multipart_chunksize=64 << 20)
    for name in sorted(os.listdir(local), key=lambda n: n == ".metadata"):  # the index last
        s3.upload_file(os.path.join(local, name), bucket, f"{prefix}/{name}", Config=config)


def empty(s3, bucket: str, prefix: str = "") -> None:
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})


def keys(s3, bucket: str, prefix: str) -> dict[str, int]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    return {o["Key"][len(prefix):]: o["Size"] for p in pages for o in p.get("Contents", [])}


def server_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) a server process has used so far; 0 without a pid."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Bench:
    def __init__(self, work: str, a: str, b: str, env: dict, pids: tuple[int, int] | None = None) -> None:
        self.work, self.a, self.b, self.env = work, a, b, env
        self.pids = pids or (None, None)  # the two moto servers: their CPU per run (where the time goes)
        self.s3 = {e: boto3.client("s3", endpoint_url=e, region_name="us-east-1") for e in (a, b)}
        self.dr = os.path.join(os.path.dirname(sys.executable), "dr")
        self.aws = awscli()

    def dr_copy(self, dst_endpoint: str, dst: str, tag: str, again: bool = False) -> dict:
        """One `dr backup` copying the checkpoint; `again`: then the same backup once more, timed
        as `unchanged_seconds` (the copy is there: dr's fixed cost, its listings and checks)."""
        plan = os.path.join(self.work, f"plan-{tag}.yaml")
        with open(plan, "w") as handle:
            handle.write(PLAN.format(repo=os.path.join(self.work, f"repo-{tag}"), src="src", src_endpoint=self.a,
                                     dst=dst, prefix=tag, dst_endpoint=dst_endpoint))
        argv = [self.dr, "backup", "--plan", plan, "--quiet"]
        run, cpu = self.timed(lambda: measure(argv, env=self.env))
        copied = keys(self.s3[dst_endpoint], dst, f"{tag}/ckpts/bench/step-1/")
        assert "DR-COMPLETE" in copied, f"dr made no complete copy: {sorted(copied)}"
        unchanged = {"unchanged_seconds": measure(argv, env=self.env).seconds} if again else {}
        empty(self.s3[dst_endpoint], dst, f"{tag}/")
        return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb, **cpu, **unchanged}

    def timed(self, go):
        """go()'s result and the CPU seconds it cost: the tool itself and each moto server."""
        before = (children_cpu(), *map(server_cpu, self.pids))
        result = go()
        after = (children_cpu(), *map(server_cpu, self.pids))
        names = ("tool_cpu", "moto_a_cpu", "moto_b_cpu")
        return result, {n: round(y - x, 2) for n, x, y in zip(names, before, after)} | {"load": os.getloadavg()[0]}

    def rclone(self, tag: str, files: int) -> dict:
        env = {k: v for k, v in self.env.items() if k != "AWS_CA_BUNDLE"}
        for name, endpoint in (("SRC", self.a), ("DST", self.b)):
            env.update({f"RCLONE_CONFIG_{name}_TYPE": "s3", f"RCLONE_CONFIG_{name}_PROVIDER": "Other",
                        f"RCLONE_CONFIG_{name}_ENDPOINT": endpoint,
                        f"RCLONE_CONFIG_{name}_FORCE_PATH_STYLE": "true",
                        f"RCLONE_CONFIG_{name}_ACCESS_KEY_ID": env["AWS_ACCESS_KEY_ID"],
                        f"RCLONE_CONFIG_{name}_SECRET_ACCESS_KEY": env["AWS_SECRET_ACCESS_KEY"]})
        run, cpu = self.timed(lambda: measure(["rclone", "copy", "--checksum", f"src:src/{CKPT}", f"dst:dst/{tag}"],
                                              env=env))
        assert len(keys(self.s3[self.b], "dst", f"{tag}/")) == files
        empty(self.s3[self.b], "dst", f"{tag}/")
        return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb, **cpu}

    def awscli(self, tag: str, files: int, single_copy: bool) -> dict:
        argv = [self.aws, "--endpoint-url", self.a, "s3", "cp", "--recursive", "--only-show-errors",
                "--checksum-algorithm", "SHA256", f"s3://src/{CKPT}/", f"s3://dst-a/{tag}/"]
        env = dict(self.env)
        if single_copy:  # one CopyObject per file, as dr sends (S3's limit for it: 5 GiB)
            config = os.path.join(self.work, "aws-config")
            with open(config, "w") as handle:
                handle.write("[default]\ns3 =\n  multipart_threshold = 5GB\n")
            env["AWS_CONFIG_FILE"] = config
        run = measure(argv, env=env)
        assert len(keys(self.s3[self.a], "dst-a", f"{tag}/")) == files
        empty(self.s3[self.a], "dst-a", f"{tag}/")
        return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}

    def raw_copy(self, tag: str, files: int, checksum: bool) -> dict:
        """CopyObject of every source file into dst-a, 8 at a time, timed in this process."""
        s3 = self.s3[self.a]
        names = keys(s3, "src", f"{CKPT}/")
        extra = {"ChecksumAlgorithm": "SHA256"} if checksum else {}
        started = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: s3.copy_object(Bucket="dst-a", Key=f"{tag}/{n}", **extra,
                                                   CopySource={"Bucket": "src", "Key": f"{CKPT}/{n}"}), names))
        seconds = time.perf_counter() - started
        assert len(keys(s3, "dst-a", f"{tag}/")) == files
        empty(s3, "dst-a", f"{tag}/")
        return {"seconds": seconds, "rss_mb": 0.0}

    def s5cmd(self, tag: str, files: int) -> dict:
        s5 = os.path.join(os.path.dirname(sys.executable), "s5cmd")
        argv = [s5, "--endpoint-url", self.a, "cp", f"s3://src/{CKPT}/*", f"s3://dst-a/{tag}/"]
        run = measure(argv, env=self.env)
        assert len(keys(self.s3[self.a], "dst-a", f"{tag}/")) == files
        empty(self.s3[self.a], "dst-a", f"{tag}/")
        return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}


AWSCLI_VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "awscli-venv")


def awscli() -> str | None:
    """The AWS CLI for the bench: bench/out/awscli-venv's, else one on PATH, else None."""
    aws = os.path.join(AWSCLI_VENV, "bin", "aws")
    return aws if os.path.exists(aws) else shutil.which("aws")


def stage(bench: Bench, work: str, gib: float, shards: int) -> tuple[int, int]:
    """Write the checkpoint, upload it as the source, drop the local copy; (files, bytes)."""
    local = os.path.join(work, "ckpt")
    started = time.perf_counter()
    size = make_checkpoint(local, int(gib * (1 << 30)), shards)
    files = len(os.listdir(local))
    empty(bench.s3[bench.a], "src")
    upload(bench.s3[bench.a], local, "src", CKPT)
    shutil.rmtree(local)
    print(f"checkpoint: {files} files, {size / 2**30:.2f} GiB, staged in {time.perf_counter() - started:.0f}s",
          flush=True)
    return files, size


def run_rounds(bench: Bench, files: int, rounds: int, cross: bool) -> dict[str, list[dict]]:
    """Each round runs every tool of a group back to back, in an order that rotates per round."""
    groups = [[("dr_same", lambda r: bench.dr_copy(bench.a, "dst-a", f"dr-s{r}")),
               ("s5cmd", lambda r: bench.s5cmd(f"s5cmd{r}", files)),
               ("copyobject", lambda r: bench.raw_copy(f"plain{r}", files, checksum=False)),
               ("copyobject_sha256", lambda r: bench.raw_copy(f"sha{r}", files, checksum=True))]]
    if bench.aws:
        groups[0][2:2] = [("awscli_sha256", lambda r: bench.awscli(f"aws{r}", files, single_copy=False)),
                          ("awscli_sha256_copyobject", lambda r: bench.awscli(f"awsc{r}", files, single_copy=True))]
    else:
        print(f"AWS CLI not found: its rows are skipped (install: python3 -m venv {AWSCLI_VENV} && "
              f"{AWSCLI_VENV}/bin/pip install awscli)", flush=True)
    if cross:
        groups.insert(0, [("dr_cross", lambda r: bench.dr_copy(bench.b, "dst", f"dr-x{r}")),
                          ("rclone", lambda r: bench.rclone(f"rclone{r}", files))])
    results: dict[str, list[dict]] = {name: [] for group in groups for name, _ in group}
    for r in range(rounds):
        for group in groups:
            shift = r % len(group)
            for name, run in group[shift:] + group[:shift]:
                results[name].append(run(r))
                print(f"round {r + 1} {name}: {results[name][-1]}", flush=True)
    return results


def run_shard_sizes(bench: Bench, work: str, shard_mbs: list[int], total_mb: int, rounds: int) -> list[dict]:
    """dr vs rclone across endpoints at each shard size: medians, ratio, dr's peak RSS."""
    rows = []
    for shard_mb in shard_mbs:
        shards = max(1, total_mb // shard_mb)
        files, size = stage(bench, work, shard_mb * shards / 1024, shards)
        group = [("dr", lambda r: bench.dr_copy(bench.b, "dst", f"dr-{shard_mb}-{r}", again=True)),
                 ("rclone", lambda r: bench.rclone(f"rclone-{shard_mb}-{r}", files))]
        runs: dict[str, list[dict]] = {"dr": [], "rclone": []}
        for r in range(rounds):
            for name, run in group[r % 2:] + group[:r % 2]:
                runs[name].append(run(r))
                print(f"  {shard_mb} MB round {r + 1} {name}: {runs[name][-1]}", flush=True)
        metrics = ("seconds", "rss_mb", "tool_cpu", "moto_a_cpu", "moto_b_cpu", "load")
        med = {k: {m: median([x[m] for x in v]) for m in metrics} for k, v in runs.items()}
        rows.append({"shard_mb": shard_mb, "files": files, "bytes": size, "rounds": rounds,
                     "dr_seconds": med["dr"]["seconds"], "rclone_seconds": med["rclone"]["seconds"],
                     "dr_unchanged_seconds": median([x["unchanged_seconds"] for x in runs["dr"]]),
                     "ratio": med["dr"]["seconds"] / med["rclone"]["seconds"], "dr_rss_mb": med["dr"]["rss_mb"],
                     "dr_rss_max_mb": max(x["rss_mb"] for x in runs["dr"]), "rclone_rss_mb": med["rclone"]["rss_mb"],
                     "cpu": {k: {m: v[m] for m in metrics[2:]} for k, v in med.items()}})
        print(shard_line(rows[-1]), flush=True)
    return rows


def shard_line(row: dict) -> str:
    return (f"{row['shard_mb']:>5} MB shards x {row['files']} ({row['bytes'] / 1e6:.0f} MB): dr {row['dr_seconds']:.2f} s, "
            f"rclone {row['rclone_seconds']:.2f} s, ratio {row['ratio']:.2f}, dr peak RSS {row['dr_rss_mb']:.0f} MB "
            f"(max {row['dr_rss_max_mb']:.0f}), rclone {row['rclone_rss_mb']:.0f} MB; medians of {row['rounds']}"
            f"\n      dr unchanged (the copy there: its fixed cost) {row['dr_unchanged_seconds']:.2f} s, "
            f"dr minus that {row['dr_seconds'] - row['dr_unchanged_seconds']:.2f} s"
            + "".join(f"\n      {k}: CPU s tool {c['tool_cpu']:.2f}, moto A {c['moto_a_cpu']:.2f}, moto B {c['moto_b_cpu']:.2f}"
                      f" (load {c['load']:.1f})" for k, c in row["cpu"].items()))


def summarize(results: dict[str, list[dict]], size: int) -> dict:
    med = {k: {m: median([x[m] for x in v]) for m in ("seconds", "rss_mb")} for k, v in results.items() if v}
    for stats in med.values():
        stats["mb_per_s"] = size / 1e6 / stats["seconds"]
    t = {k: v["seconds"] for k, v in med.items()}
    ratios = {"dr/s5cmd time (one endpoint)": t["dr_same"] / t["s5cmd"]}
    if "awscli_sha256" in t:
        ratios["dr/aws s3 cp --checksum-algorithm SHA256 time (one endpoint)"] = t["dr_same"] / t["awscli_sha256"]
        ratios["dr/the same, one CopyObject per file"] = t["dr_same"] / t["awscli_sha256_copyobject"]
    ratios |= {"dr/CopyObject+SHA-256 time (one endpoint, same server work)": t["dr_same"] / t["copyobject_sha256"],
              "CopyObject+SHA-256/plain time (moto's checksum cost)": t["copyobject_sha256"] / t["copyobject"]}
    if "dr_cross" in t:
        ratios["dr/rclone time (across endpoints)"] = t["dr_cross"] / t["rclone"]
    return {"medians": med, "ratios": ratios}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-gib", type=float, default=2.0)
    parser.add_argument("--big-gib", type=float, default=8.0, help="memory run size; 0 skips it")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one-endpoint", action="store_true", help="skip the across-endpoints rounds")
    parser.add_argument("--shard-mb", default="", help="e.g. 64,256,1024: dr vs rclone at each shard size")
    parser.add_argument("--total-mb", type=int, default=512, help="checkpoint size per --shard-mb size")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    creds = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
    env = {**{k: v for k, v in os.environ.items() if k not in ("AWS_PROFILE",)}, **creds}
    os.environ.update(creds)
    work = tempfile.mkdtemp(prefix="dr-bench-ckpt-")
    try:
        with moto_server() as server_a, moto_server() as server_b:
            a, b = f"http://127.0.0.1:{server_a.port}", f"http://127.0.0.1:{server_b.port}"
            bench = Bench(work, a, b, env, (server_a.process.pid, server_b.process.pid))
            for endpoint, bucket in ((a, "src"), (b, "dst"), (a, "dst-a")):
                bench.s3[endpoint].create_bucket(Bucket=bucket)
            if args.shard_mb:
                rows = run_shard_sizes(bench, work, [int(x) for x in args.shard_mb.split(",")], args.total_mb,
                                       args.rounds)
                print(json.dumps(rows, indent=2) if args.json else "\n".join(["", *map(shard_line, rows)]))
                return
            files, size = stage(bench, work, args.size_gib, args.shards)
            results = run_rounds(bench, files, args.rounds, cross=not args.one_endpoint)
            summary = summarize(results, size) | {"checkpoint_gib": size / 2**30, "files": files}
            if args.big_gib:
                _, big = stage(bench, work, args.big_gib, args.shards)
                run = bench.dr_copy(b, "dst", "dr-big")
                summary["big"] = {"checkpoint_gib": big / 2**30, **run, "mb_per_s": big / 1e6 / run["seconds"]}
        print(json.dumps(summary, indent=2) if args.json else report(summary))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(s: dict) -> str:
    lines = [f"\ncheckpoint {s['checkpoint_gib']:.2f} GiB in {s['files']} files; medians:",
             f"{'':28}{'seconds':>10}{'MB/s':>10}{'peak RSS MB':>14}"]
    for name, m in s["medians"].items():
        rss = f"{m['rss_mb']:>14.1f}" if m["rss_mb"] else f"{'(in bench)':>14}"
        lines.append(f"{name:28}{m['seconds']:>10.2f}{m['mb_per_s']:>10.1f}{rss}")
    lines += [f"{name}: {ratio:.2f}" for name, ratio in s["ratios"].items()]
    if "big" in s:
        g = s["big"]
        lines.append(f"dr across endpoints, {g['checkpoint_gib']:.2f} GiB: {g['seconds']:.1f}s "
                     f"({g['mb_per_s']:.1f} MB/s), peak RSS {g['rss_mb']:.1f} MB")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
