"""Benchmark: dr's mlflow exporter vs mlflow-export-import on the same registry, two sizes, one run.

For each size (models x versions, each version with its own run: 20 params, 20 metrics, 10
tags, a 1 KiB model artifact in the source server's S3 artifact root on moto; version 2 of every model (of 4 or more versions) deleted; aliases champion and
challenger) on a real MLflow server (sqlite, file artifact root, one worker):
  export      dr backup (first)  vs  export-models --models all
  unchanged   dr backup again (nothing changed)
  restore     dr restore --to an empty server  vs  import-models into another empty server
and, after each restore, whether version numbers and aliases are what they were at the source.
Prints medians of --rounds runs and the machine's load average; wall time and peak RSS of each
command (bench/common.py). The peer is databricks-mlflow-export-import (the maintained line of
mlflow-export-import; the PyPI mlflow-export-import 1.2.0 predates MLflow 3), installed by the
test extras. Run: .venv/bin/python bench/bench_mlflow.py [--sizes 10x5,50x10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import boto3  # noqa: E402

from bench.common import measure, median  # noqa: E402
from tests.mlflow.registries import Rest, tags  # noqa: E402
from tests.servers import mlflow_server, moto_server  # noqa: E402

BIN = os.path.dirname(sys.executable)
PLAN = """version: 1
name: bench-mlflow
failure_domains:
  - {{name: site-a, kind: region}}
  - {{name: site-b, kind: region}}
protects_against: [site-a]
targets:
  - {{name: local, url: "{repo}", domain: site-b}}
sources:
  - {{name: registry, type: mlflow, tracking_uri: "{url}"}}
"""


def add_version(rest: Rest, s3, experiment: str, model: str, number: int) -> tuple[str, str]:
    start = 1_700_000_000_000 + number
    run = rest.post("/runs/create", {"experiment_id": experiment, "run_name": f"{model}-{number}", "start_time": start,
                                     "tags": tags({f"tag{i}": f"value-{i}" for i in range(10)})})["run"]["info"]
    run_id = run["run_id"]
    rest.post("/runs/log-batch", {"run_id": run_id, "params": tags({f"param{i}": str(i * 0.1) for i in range(20)}),
                                  "metrics": [{"key": f"metric{i}", "value": i / 20, "timestamp": start, "step": 1}
                                              for i in range(20)]})
    where = urlsplit(run["artifact_uri"] + "/model")  # s3://bucket/<experiment>/<run>/artifacts/model
    s3.put_object(Bucket=where.netloc, Key=where.path.strip("/") + "/MLmodel", Body=b"artifact_path: model\nflavors: {}\n")
    s3.put_object(Bucket=where.netloc, Key=where.path.strip("/") + "/model.bin", Body=os.urandom(1024))
    rest.post("/runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": start + 1000})
    return run_id, run["artifact_uri"] + "/model"


def build(url: str, s3, models: int, versions: int) -> None:
    def one(m: int) -> None:
        rest, name = Rest(url), f"model-{m:04d}"
        experiment = rest.post("/experiments/create", {"name": f"exp-{m:04d}"})["experiment_id"]
        rest.post("/registered-models/create", {"name": name, "description": f"model {m}",
                                                "tags": tags({"team": "bench", "tier": str(m % 3)})})
        for n in range(1, versions + 1):
            run_id, source = add_version(rest, s3, experiment, name, n)
            rest.post("/model-versions/create", {"name": name, "source": source, "run_id": run_id,
                                                 "description": f"v{n}", "tags": tags({"validated": "yes"})})
        if versions >= 4:  # a gap in the middle (champion and challenger are the last two)
            rest.delete("/model-versions/delete", {"name": name, "version": "2"})
        rest.post("/registered-models/alias", {"name": name, "alias": "champion", "version": str(versions)})
        rest.post("/registered-models/alias", {"name": name, "alias": "challenger", "version": str(versions - 1)})
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(models)))


def shape(url: str) -> dict:
    """model -> (sorted version numbers, aliases): what a restore must keep."""
    rest, out = Rest(url), {}
    for m in rest.get("/registered-models/search", max_results=1000).get("registered_models", []):
        versions = rest.get("/model-versions/search", filter=f"name='{m['name']}'").get("model_versions", [])
        out[m["name"]] = (sorted(int(v["version"]) for v in versions),
                          sorted((a["alias"], a["version"]) for a in m.get("aliases", [])))
    return out


def agreement(source: dict, restored: dict) -> str:
    same_numbers = sum(1 for k, v in source.items() if k in restored and restored[k][0] == v[0])
    same_aliases = sum(1 for k, v in source.items() if k in restored and restored[k][1] == v[1])
    return f"numbers {same_numbers}/{len(source)}, aliases {same_aliases}/{len(source)}"


def started(work: str, label: str, endpoint: str, s3):
    """A new server whose artifact root is a new bucket on the moto server."""
    bucket = f"{label}-{os.urandom(4).hex()}"
    s3.create_bucket(Bucket=bucket)
    return mlflow_server(tempfile.mkdtemp(prefix=f"{label}-", dir=work), f"s3://{bucket}", endpoint).start()


def round_(work: str, url: str, source_shape: dict, env: dict, endpoint: str, s3) -> dict:
    repo, plan = tempfile.mkdtemp(prefix="repo-", dir=work), os.path.join(work, f"plan-{time.time_ns()}.yaml")
    with open(plan, "w") as handle:
        handle.write(PLAN.format(repo=repo, url=url))
    dr = os.path.join(BIN, "dr")
    first = measure([dr, "backup", "--plan", plan, "-q"], env=env)
    second = measure([dr, "backup", "--plan", plan, "-q"], env=env)
    out = tempfile.mkdtemp(prefix="peer-", dir=work)
    peer_env = {**env, "MLFLOW_TRACKING_URI": url}
    peer_export = measure([os.path.join(BIN, "export-models"), "--models", "all", "--output-dir", out], env=peer_env)
    a, b = started(work, "dr-dest", endpoint, s3), started(work, "peer-dest", endpoint, s3)
    try:
        a_url, b_url = f"http://127.0.0.1:{a.port}", f"http://127.0.0.1:{b.port}"
        restore = measure([dr, "restore", "--plan", plan, "--source", "registry", "--to", a_url, "-q"], env=env)
        peer_import = measure([os.path.join(BIN, "import-models"), "--input-dir", out],
                              env={**env, "MLFLOW_TRACKING_URI": b_url})
        kept = {"dr": agreement(source_shape, shape(a_url)), "peer": agreement(source_shape, shape(b_url))}
    finally:
        a.stop()
        b.stop()
    return {"dr_export_s": first.seconds, "dr_unchanged_s": second.seconds, "peer_export_s": peer_export.seconds,
            "dr_restore_s": restore.seconds, "peer_import_s": peer_import.seconds,
            "dr_export_rss_mb": first.peak_rss_mb, "dr_restore_rss_mb": restore.peak_rss_mb,
            "peer_export_rss_mb": peer_export.peak_rss_mb, "peer_import_rss_mb": peer_import.peak_rss_mb,
            "kept": kept}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10x5,50x10", help="models x versions, comma separated")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "AWS_"))}
    env.update({"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", "AWS_ACCESS_KEY_ID": "bench",
                "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"})
    os.environ.update({k: env[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")})
    work = tempfile.mkdtemp(prefix="dr-bench-mlflow-")
    summary = {}
    with moto_server() as moto:
        endpoint = f"http://127.0.0.1:{moto.port}"
        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        env["MLFLOW_S3_ENDPOINT_URL"] = endpoint  # the peer's mlflow client reads and writes artifacts there
        try:
            run_sizes(args, work, env, endpoint, s3, summary)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    report(summary)


def run_sizes(args, work: str, env: dict, endpoint: str, s3, summary: dict) -> None:
    for size in args.sizes.split(","):
        models, versions = (int(x) for x in size.split("x"))
        source = started(work, "source", endpoint, s3)
        try:
            url = f"http://127.0.0.1:{source.port}"
            t = time.perf_counter()
            build(url, s3, models, versions)
            print(f"{size}: registry built in {time.perf_counter() - t:.1f} s", flush=True)
            source_shape = shape(url)
            rounds = []
            for r in range(args.rounds):
                rounds.append(round_(work, url, source_shape, env, endpoint, s3))
                print(f"{size} round {r + 1}: {json.dumps(rounds[-1])}", flush=True)
        finally:
            source.stop()
        keys = [k for k in rounds[0] if k != "kept"]
        summary[size] = {**{k: round(median([x[k] for x in rounds]), 2) for k in keys}, "kept": rounds[-1]["kept"]}


def report(summary: dict) -> None:
    print("\nmedians (seconds, MB); load average at the end:", os.getloadavg())
    print(json.dumps(summary, indent=2))
    for size, m in summary.items():
        print(f"{size}: export dr/peer {m['dr_export_s'] / m['peer_export_s']:.2f}, unchanged/first "
              f"{m['dr_unchanged_s'] / m['dr_export_s']:.2f}, restore dr/peer {m['dr_restore_s'] / m['peer_import_s']:.2f}")


if __name__ == "__main__":
    main()
