"""Benchmark: `dr audit` over a synthetic snapshot of 100,000 artifacts and 1,000,000 references.

    .venv/bin/python bench/bench_audit.py [--artifacts 100000] [--deps 10] [--dir DIR]

The snapshot is written through the real SnapshotWriter into a local repository, in a child
process (so its memory does not count); then this process runs the audit exactly as `dr audit`
does (plan load, catalog read and verify, gathering, judging in both scenarios) and renders the
Markdown, JSON and HTML reports. It prints wall times and this process's peak RSS, and exits 1
when the audit misses its targets: under 10 s and under 1 GB.

References are drawn from pools the size a large platform has (tens of thousands of distinct
images, buckets, remotes ...), so most are repeats, as in real catalogs; some of every pool sit
in the failed cluster or region, some are placed nowhere, and the Git remotes are bundled.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TARGET_SECONDS = 10.0
TARGET_RSS_MB = 1024.0

PLAN = """\
version: 1
name: bench
failure_domains:
  - name: aws
    kind: provider
    children:
      - name: prod
        kind: account
        children:
          - {{name: eu-west-1, kind: region, children: [{{name: train-eu1, kind: cluster}}]}}
          - {{name: us-east-1, kind: region, children: [{{name: serve-us1, kind: cluster}}]}}
  - {{name: github, kind: provider}}
locations:
  - {{name: ckpt-eu, domain: eu-west-1, kind: bucket, prefixes: ["s3://ckpt-eu/"]}}
  - {{name: ckpt-us, domain: us-east-1, kind: bucket, prefixes: ["s3://ckpt-us/"]}}
  - {{name: github, domain: github, kind: git, hosts: [github.com]}}
  - {{name: secrets-us, domain: us-east-1, prefixes: ["arn:aws:secretsmanager:us-east-1:"]}}
placement_rules:
  - {{match: "*.svc.cluster.local", domain: train-eu1, reason: in-cluster DNS}}
  - {{match: "*.apps.train-eu1.example.com", domain: train-eu1, reason: ingress}}
  - {{match: "*.eu-west-1.amazonaws.com", domain: eu-west-1, reason: regional endpoint}}
  - {{match: "*.us-east-1.amazonaws.com", domain: us-east-1, reason: regional endpoint}}
protects_against: [train-eu1, eu-west-1]
targets:
  - {{name: dr-us, url: "{repo}", domain: us-east-1,
     credentials_location: "arn:aws:secretsmanager:us-east-1:1:secret:dr"}}
dr_image: "1.dkr.ecr.us-east-1.amazonaws.com/dr:1"
sources:
{sources}
"""
SOURCES = 20

POOLS = [  # (dependency kind, pool size, reference patterns chosen by index)
    ("image", 20000, ["registry.kube-system.svc.cluster.local:5000/team{m}/img{i}:v1",
                      "1.dkr.ecr.us-east-1.amazonaws.com/team{m}/img{i}:v1",
                      "1.dkr.ecr.eu-west-1.amazonaws.com/team{m}/img{i}:v1",
                      "1.dkr.ecr.us-east-1.amazonaws.com/team{m}/img{i}:v2"]),
    ("bucket", 10000, ["s3://ckpt-eu/run-{i}/", "s3://ckpt-us/run-{i}/", "s3://ckpt-us/run-{i}/"]),
    ("git-remote", 1000, ["https://gitea.apps.train-eu1.example.com/team{m}/repo{i}.git",
                          "git@github.com:acme/repo{i}.git"]),
    ("secret-store", 500, ["https://vault.vault.svc.cluster.local:8200/v1/team{m}/s{i}",
                           "arn:aws:secretsmanager:us-east-1:1:secret:team{m}/s{i}"]),
    ("helm-repo", 200, ["https://charts.apps.train-eu1.example.com/c{i}",
                        "oci://1.dkr.ecr.us-east-1.amazonaws.com/c{i}"]),
    ("dataset", 300, ["https://data{m}.partner.example.net/set{i}"]),
]
WEIGHTS = [60, 20, 5, 8, 4, 3]


def reference(kind_index: int, i: int) -> tuple[str, str]:
    kind, _, patterns = POOLS[kind_index]
    return kind, patterns[i % len(patterns)].format(i=i, m=i % 37)


def build(folder: str, artifacts: int, deps: int) -> None:
    """Write the plan and one snapshot (runs in a child process)."""
    from dr.model.artifacts import Dependency
    from dr.repository.repositories import Repository
    from dr.repository.stores.local import LocalStore
    from dr.repository.writing import SnapshotWriter

    repo_path = os.path.join(folder, "repo")
    sources = "\n".join(f"  - {{name: src{n}, type: kubernetes, rpo: 1h}}" for n in range(SOURCES))
    with open(os.path.join(folder, "plan.yaml"), "w") as handle:
        handle.write(PLAN.format(repo=repo_path, sources=sources))
    repo = Repository(LocalStore(repo_path))
    repo.init()
    rng = random.Random(7)
    writer = SnapshotWriter(repo, [])
    results = []
    per_source = artifacts // SOURCES
    for n in range(SOURCES):
        sink = writer.source(f"src{n}", "kubernetes")
        for a in range(per_source):
            picks = rng.choices(range(len(POOLS)), WEIGHTS, k=deps)
            dependencies = [Dependency(*reference(k, rng.randrange(POOLS[k][1])), "spec") for k in picks]
            meta = None
            if n == 0 and a < POOLS[2][1]:  # the first source bundles every Git remote
                meta = {"provides": [reference(2, a)[1]]}
            sink.write("object", f"ns{a % 50}/obj{a}", b"content", dependencies=dependencies, meta=meta)
        results.append(sink.commit())
    writer.finish("bench", results)
    writer.close()


def audit(folder: str) -> dict:
    from dr.audit import choose_audited_target, run_audit, scenarios_for
    from dr.audit.reports_html import render_html
    from dr.audit.reports_json import render_json
    from dr.audit.reports_md import render_markdown
    from dr.model.plan_loading import load_plan
    from dr.repository.targets import open_target

    started = time.perf_counter()
    plan = load_plan(os.path.join(folder, "plan.yaml"))
    scenarios = scenarios_for(plan)
    target = choose_audited_target(plan, scenarios)
    repo = open_target(plan, target)
    repo.open()
    report = run_audit(plan, repo, target, scenarios)
    audited = time.perf_counter()
    renders = {}
    for name, render in (("md", render_markdown), ("json", render_json), ("html", render_html)):
        began = time.perf_counter()
        size = len(render(report))
        renders[name] = (time.perf_counter() - began, size)
    rendered = time.perf_counter()
    return {"report": report, "audit_s": audited - started, "renders": renders,
            "total_s": rendered - started}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=int, default=100_000)
    parser.add_argument("--deps", type=int, default=10, help="dependency references per artifact")
    parser.add_argument("--dir", help="work folder (default: a temporary one, removed afterwards)")
    parser.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_only:
        build(args.dir, args.artifacts, args.deps)
        return 0
    folder = args.dir or tempfile.mkdtemp(prefix="bench-audit-")
    try:
        started = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--build-only", "--dir", folder, "--artifacts",
                        str(args.artifacts), "--deps", str(args.deps)], check=True)
        built = time.perf_counter() - started
        rss_before = peak_rss_mb()
        result = audit(folder)
        report, rss = result["report"], peak_rss_mb()
        snap = report.snapshot
        print(f"snapshot: {snap.artifacts:,} artifacts, {snap.references:,} dependency references, "
              f"{snap.distinct_references:,} distinct (written in {built:.1f} s, not counted)")
        print(f"findings: {report.blockers} blockers, {report.warnings} warnings, {report.infos} remaps "
              f"in {len(report.scenarios)} scenarios")
        print(f"audit (load plan, read+verify catalog, gather, judge): {result['audit_s']:.2f} s")
        for name, (seconds, size) in result["renders"].items():
            extra = " (2 Graphviz pictures)" if name == "html" else ""
            print(f"  {name} report: {seconds:.2f} s, {size:,} bytes{extra}")
        print(f"wall time, audit + all three reports: {result['total_s']:.2f} s "
              f"(target < {TARGET_SECONDS:.0f} s)")
        print(f"peak RSS: {rss:.0f} MB (before the audit: {rss_before:.0f} MB; target < {TARGET_RSS_MB:.0f} MB)")
        ok = result["total_s"] < TARGET_SECONDS and rss < TARGET_RSS_MB
        print("PASS" if ok else "FAIL: over target")
        return 0 if ok else 1
    finally:
        if not args.dir:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
