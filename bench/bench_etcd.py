"""Benchmark: an etcd snapshot of --size-mib of keys, encrypted, dr vs `etcdctl snapshot save` + `age`.

One etcd 3.4 (Debian) on 127.0.0.1 is filled with --size-mib MiB of values (1 MiB each, random:
incompressible), then, in alternating order each round:
  * dr: `dr backup` of an `etcd` source into a new local repository (the snapshot streamed from
    the maintenance API's gRPC Snapshot call, its sha256 trailer checked, encrypted to an age
    recipient, chunked and stored), process start-up included;
  * peer: `etcdctl snapshot save FILE` then `age -r RECIPIENT -o FILE.age FILE` (the same
    recipient), timed together; the snapshot's sha256 is checked by etcdctl as it saves.
Medians and the dr/peer ratio are printed (JSON with --json).

Run: .venv/bin/python bench/bench_etcd.py [--size-mib 1024] [--rounds 3]
Needs: etcd-server, etcd-client, age (scripts/install-test-deps); disk for about four copies.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import measure, median, two_site_plan  # noqa: E402
from dr.repository.encryption import generate_identity  # noqa: E402
from tests.servers import etcd_server  # noqa: E402

SOURCES = """  - name: control-plane
    type: etcd
    clusters: [{{name: bench, endpoints: ["{endpoint}"]}}]
"""
ENCRYPTION = 'encryption:\n  recipients: ["{recipient}"]\n'


def fill(endpoint: str, mib: int) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for i in range(mib):
        body = json.dumps({"key": base64.b64encode(f"/registry/bench/{i:06d}".encode()).decode(),
                           "value": base64.b64encode(os.urandom(1 << 20)).decode()}).encode()
        with opener.open(urllib.request.Request(endpoint + "/v3/kv/put", body, method="POST"), timeout=60):
            pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="dr-bench-etcd-")
    server = etcd_server(os.path.join(work, "etcd"), name="bench",
                         extra=("--quota-backend-bytes", str(8 << 30), "--max-request-bytes", str(2 << 20))).start()
    endpoint = f"http://127.0.0.1:{server.port}"
    identity, recipient = generate_identity()
    plan = os.path.join(work, "plan.yaml")
    dr = os.path.join(os.path.dirname(sys.executable), "dr")
    results: dict[str, list[dict]] = {"dr backup": [], "etcdctl snapshot save + age": []}
    try:
        fill(endpoint, args.size_mib)

        def run_dr() -> dict:
            repo = os.path.join(work, "repo")
            shutil.rmtree(repo, ignore_errors=True)
            with open(plan, "w") as handle:
                handle.write(two_site_plan("bench-etcd", repo, SOURCES.format(endpoint=endpoint),
                                               ENCRYPTION.format(recipient=recipient)))
            run = measure([dr, "backup", "--plan", plan, "--quiet"])
            return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}

        def run_peer() -> dict:
            snap = os.path.join(work, "snap.db")
            for path in (snap, snap + ".age"):
                if os.path.exists(path):
                    os.unlink(path)
            save = measure(["etcdctl", "--endpoints", endpoint, "snapshot", "save", snap],
                           env={**os.environ, "ETCDCTL_API": "3"})
            enc = measure(["age", "-r", recipient, "-o", snap + ".age", snap])
            return {"seconds": save.seconds + enc.seconds, "rss_mb": max(save.peak_rss_mb, enc.peak_rss_mb),
                    "bytes": os.path.getsize(snap)}

        for round_ in range(args.rounds):
            order = [("dr backup", run_dr), ("etcdctl snapshot save + age", run_peer)]
            for name, run in (order if round_ % 2 == 0 else order[::-1]):
                results[name].append(run())
                print(f"round {round_ + 1} {name}: {results[name][-1]['seconds']:.2f} s", file=sys.stderr)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    summary = {n: {"seconds": median([r["seconds"] for r in rs]), "rss_mb": median([r["rss_mb"] for r in rs])}
               for n, rs in results.items()}
    ratio = summary["dr backup"]["seconds"] / summary["etcdctl snapshot save + age"]["seconds"]
    size = results["etcdctl snapshot save + age"][0]["bytes"]
    if args.json:
        print(json.dumps({"size_mib": args.size_mib, "snapshot_bytes": size, "median": summary, "ratio": ratio}))
        return
    print(f"{args.size_mib} MiB of values, snapshot {size:,} bytes, {args.rounds} rounds (medians)")
    for name, values in summary.items():
        print(f"  {name:30} {values['seconds']:8.2f} s  {values['rss_mb']:7.0f} MB")
    print(f"  dr / peer {ratio:.2f}")


if __name__ == "__main__":
    main()
