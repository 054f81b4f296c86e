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
import sqlite3
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import boto3  # noqa: E402

from bench.common import measure, median  # noqa: E402
from tests.mlflow.registries import Rest, tags  # noqa: E402
from tests.servers import mlflow_server, moto_server  # noqa: E402

BIN = os.path.dirname(sys.executable)
# timeout_seconds 120, the mlflow client's own default (MLFLOW_HTTP_REQUEST_TIMEOUT) that the peer
# runs with: at load ~20 a one-worker server stalls some requests past dr's default 30 s
PLAN = """version: 1
name: bench-mlflow
failure_domains:
  - {{name: site-a, kind: region}}
  - {{name: site-b, kind: region}}
protects_against: [site-a]
targets:
  - {{name: local, url: "{repo}", domain: site-b}}
sources:
  - {{name: registry, type: mlflow, tracking_uri: "{url}", timeout_seconds: 120}}
"""


def add_version(rest: Rest, s3, experiment: str, model: str, number: int) -> tuple[str, str]:
    start = 1_700_000_000_000 + number
    run = rest.post("/runs/create", {"experiment_id": experiment, "run_name": f"{model}-{number}", "start_time": start,
                                     "tags": tags({f"tag{i}": f"value-{i}" for i in range(10)})})["run"]["info"]
    run_id = run["run_id"]
    rest.post("/runs/log-batch", {"run_id": run_id, "params": tags({f"param{i}": str(i * 0.1) for i in range(20)}),
                                  "metrics": [{"key": f"metric{i}", "value": i / 20, "timestamp": start, "step": 1}
                                              for i in range(20)]})
    put_model(s3, run["artifact_uri"] + "/model")
    rest.post("/runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": start + 1000})
    return run_id, run["artifact_uri"] + "/model"


def build_model(url: str, s3, m: int, versions: int) -> None:
    """Model m, its experiment, and per version a run, artifacts and the version, over REST."""
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


def build(url: str, db: str, s3, models: int, versions: int, how: str) -> None:
    """The source registry. `rest`: every model over the REST API (about 5 requests per version;
    over an hour for 500 x 10 on the shared 2-core machine). `clone` (default): model 0 over the
    REST API, then its rows cloned in the server's sqlite database for the other models, with
    new run ids, experiment ids and names, and their artifacts written to the bucket (seconds)."""
    if how == "rest":
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda m: build_model(url, s3, m, versions), range(models)))
        return
    build_model(url, s3, 0, versions)
    clone(db, s3, models)


# the tables holding one model's registry entries, runs and experiment, and what ties them to it
BY_NAME = ("registered_models", "registered_model_tags", "registered_model_aliases", "model_versions",
           "model_version_tags")
BY_RUN = ("tags", "params", "metrics", "latest_metrics")
BY_EXPERIMENT = ("experiments", "experiment_tags", "runs")


def clone(db: str, s3, models: int) -> None:
    """Copy model-0000's rows (in MLflow's own schema, written by its server) as models 1..N-1."""
    con = sqlite3.connect(db, timeout=60)
    con.row_factory = sqlite3.Row
    (experiment,) = con.execute("SELECT experiment_id FROM experiments WHERE name = 'exp-0000'").fetchone()
    top = con.execute("SELECT max(experiment_id) FROM experiments").fetchone()[0]
    run_ids = [r[0] for r in con.execute("SELECT run_uuid FROM runs WHERE experiment_id = ?", (experiment,))]
    rows = {t: [dict(r) for r in con.execute(f"SELECT * FROM {t} WHERE name = 'model-0000'")] for t in BY_NAME}
    rows |= {t: [dict(r) for r in con.execute(f"SELECT * FROM {t} WHERE experiment_id = ?", (experiment,))]
             for t in BY_EXPERIMENT}
    marks = ",".join("?" * len(run_ids))
    rows |= {t: [dict(r) for r in con.execute(f"SELECT * FROM {t} WHERE run_uuid IN ({marks})", run_ids)]
             for t in BY_RUN}
    objects = []
    with con:
        for m in range(1, models):
            new_experiment = top + m
            runs = {old: uuid.uuid4().hex for old in run_ids}
            swaps = [("model-0000", f"model-{m:04d}"), ("exp-0000", f"exp-{m:04d}"),
                     (f"/{experiment}/", f"/{new_experiment}/"), *runs.items()]

            def renamed(value):
                if isinstance(value, str):
                    for old, new in swaps:
                        value = value.replace(old, new)
                return value
            for table, found in rows.items():
                copies = [{k: (new_experiment if k == "experiment_id" else renamed(v)) for k, v in r.items()}
                          for r in found]
                for r in copies:
                    if table == "experiments":
                        r["artifact_location"] = r["artifact_location"].rsplit("/", 1)[0] + f"/{new_experiment}"
                    if table == "registered_models":
                        r["description"] = f"model {m}"
                    if table == "registered_model_tags" and r["key"] == "tier":
                        r["value"] = str(m % 3)
                if copies:
                    cols = list(copies[0])
                    con.executemany(f"INSERT INTO {table} ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                                    [tuple(r[c] for c in cols) for r in copies])
            objects += [renamed(r["artifact_uri"]) + "/model" for r in rows["runs"]]
    con.close()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda uri: put_model(s3, uri), objects))


def put_model(s3, uri: str) -> None:
    where = urlsplit(uri)  # s3://bucket/<experiment>/<run>/artifacts/model
    s3.put_object(Bucket=where.netloc, Key=where.path.strip("/") + "/MLmodel", Body=b"artifact_path: model\nflavors: {}\n")
    s3.put_object(Bucket=where.netloc, Key=where.path.strip("/") + "/model.bin", Body=os.urandom(1024))


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
    """A new server whose artifact root is a new bucket on the moto server (its sqlite database
    is `server.db`)."""
    bucket, folder = f"{label}-{os.urandom(4).hex()}", tempfile.mkdtemp(prefix=f"{label}-", dir=work)
    s3.create_bucket(Bucket=bucket)
    server = mlflow_server(folder, f"s3://{bucket}", endpoint).start()
    server.db = os.path.join(folder, "mlflow.db")
    return server


def step(what: str, run):
    print(f"  {what}: {run.seconds:.1f} s, {run.peak_rss_mb:.0f} MB, load {os.getloadavg()[0]:.1f}", flush=True)
    return run


def round_(work: str, url: str, source_shape: dict, env: dict, endpoint: str, s3, peer: bool, args) -> dict:
    if args.peer_only:
        return {**peer_round(work, url, source_shape, env, endpoint, s3, kept := {}, args), "kept": kept}
    repo, plan = tempfile.mkdtemp(prefix="repo-", dir=work), os.path.join(work, f"plan-{time.time_ns()}.yaml")
    with open(plan, "w") as handle:
        handle.write(PLAN.format(repo=repo, url=url))
    dr = os.path.join(BIN, "dr")
    first = step("dr export", measure([dr, "backup", "--plan", plan, "-q"], env=env))
    second = step("dr unchanged", measure([dr, "backup", "--plan", plan, "-q"], env=env))
    out = {"dr_export_s": first.seconds, "dr_unchanged_s": second.seconds, "dr_export_rss_mb": first.peak_rss_mb}
    a = started(work, "dr-dest", endpoint, s3)
    try:
        a_url = f"http://127.0.0.1:{a.port}"
        restore = step("dr restore", measure([dr, "restore", "--plan", plan, "--source", "registry", "--to", a_url,
                                              "-q"], env=env))
        out |= {"dr_restore_s": restore.seconds, "dr_restore_rss_mb": restore.peak_rss_mb}
        kept = {"dr": agreement(source_shape, shape(a_url))}
    finally:
        a.stop()
    if peer:
        out |= peer_round(work, url, source_shape, env, endpoint, s3, kept, args)
    return {**out, "kept": kept}


def peer_round(work: str, url: str, source_shape: dict, env: dict, endpoint: str, s3, kept: dict, args) -> dict:
    out = tempfile.mkdtemp(prefix="peer-", dir=work)
    threads = ["--use-threads", "True"] if args.peer_export_threads else []
    export = step("peer export-models" + (" (threads)" if threads else ""),
                  measure([os.path.join(BIN, "export-models"), "--models", "all", "--output-dir", out, *threads],
                          env={**env, "MLFLOW_TRACKING_URI": url}))
    b = started(work, "peer-dest", endpoint, s3)
    try:
        b_url = f"http://127.0.0.1:{b.port}"
        imported = step("peer import-models", measure([os.path.join(BIN, "import-models"), "--input-dir", out],
                                                      env={**env, "MLFLOW_TRACKING_URI": b_url},
                                                      timeout=args.peer_import_cap))
        kept["peer"] = agreement(source_shape, landed := shape(b_url))
    finally:
        b.stop()
    result = {"peer_export_s": export.seconds, "peer_import_s": imported.seconds,
              "peer_export_rss_mb": export.peak_rss_mb, "peer_import_rss_mb": imported.peak_rss_mb}
    if imported.timed_out:  # its time is then a lower bound: the whole import takes longer
        result |= {"peer_import_stopped": 1.0, "peer_import_models_done": float(len(landed)),
                   "peer_import_versions_done": float(sum(len(v[0]) for v in landed.values()))}
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10x5,50x10", help="models x versions, comma separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build", choices=("clone", "rest"), default="clone",
                        help="how the source registry is written (see build())")
    parser.add_argument("--peer-max", type=int, default=None,
                        help="run the peer only at sizes of at most this many versions (dr alone above)")
    parser.add_argument("--peer-only", action="store_true",
                        help="run the peer alone (to compare with dr's figures from another run of the same size)")
    parser.add_argument("--peer-export-threads", action="store_true",
                        help="export-models --use-threads True (only to prepare the import faster; its export "
                             "time is then not the peer's default)")
    parser.add_argument("--peer-import-cap", type=float, default=None,
                        help="stop import-models after this many seconds; its time is then a lower bound")
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
        except Exception:
            print(f"failed; its plans and repositories are kept in {work}", flush=True)
            raise
        shutil.rmtree(work, ignore_errors=True)
    report(summary)


def run_sizes(args, work: str, env: dict, endpoint: str, s3, summary: dict) -> None:
    for size in args.sizes.split(","):
        models, versions = (int(x) for x in size.split("x"))
        source = started(work, "source", endpoint, s3)
        try:
            url = f"http://127.0.0.1:{source.port}"
            t = time.perf_counter()
            build(url, source.db, s3, models, versions, args.build)
            source_shape = shape(url)
            print(f"{size}: registry built in {time.perf_counter() - t:.1f} s ({args.build}), "
                  f"{sum(len(v[0]) for v in source_shape.values())} versions, load {os.getloadavg()}", flush=True)
            rounds = []
            for r in range(args.rounds):
                peer = args.peer_max is None or len([n for v in source_shape.values() for n in v[0]]) <= args.peer_max
                rounds.append(round_(work, url, source_shape, env, endpoint, s3, peer, args))
                print(f"{size} round {r + 1}: {json.dumps(rounds[-1])}", flush=True)
        finally:
            source.stop()
        keys = [k for k in rounds[0] if k != "kept"]
        summary[size] = {**{k: round(median([x[k] for x in rounds]), 2) for k in keys}, "kept": rounds[-1]["kept"]}


def report(summary: dict) -> None:
    print("\nmedians (seconds, MB); load average at the end:", os.getloadavg())
    print(json.dumps(summary, indent=2))
    for size, m in summary.items():
        said = f"{size}:"
        if "dr_export_s" in m:
            said += f" unchanged/first {m['dr_unchanged_s'] / m['dr_export_s']:.3f}"
        if "peer_export_s" in m and "dr_export_s" in m:
            said += (f", export dr/peer {m['dr_export_s'] / m['peer_export_s']:.2f}, "
                     f"restore dr/peer {m['dr_restore_s'] / m['peer_import_s']:.2f}")
        if m.get("peer_import_stopped"):
            said += (f" peer import stopped after {m['peer_import_s']:.0f} s with "
                     f"{m['peer_import_versions_done']:.0f} versions in; its whole import takes longer")
        print(said)

if __name__ == "__main__":
    main()
