"""Benchmark: the kubernetes exporter against the raw client, on the emulated API server.

Fills an emulated cluster (tests/harness/kube.py, in this process) with LeaderWorkerSets (the
upstream CRD and example: a custom resource with pod templates) across 50 namespaces, then
runs, each in a child process so that its peak RSS comes from os.wait4:
  raw-list    a paginated list (limit/continue) of the same objects with the same client
  dr-backup   the exporter writing a snapshot (Repository(LocalStore) + SnapshotWriter)
  raw-create  the objects created with the same client and as many threads as dr uses
  dr-restore  the exporter restoring the snapshot into an empty cluster
Times are measured inside each child around the operation (not interpreter start, nor the
imports: each side's modules are loaded before its clock starts); medians
of --rounds rounds at --objects, of --big-rounds at --big (backup and restore at both sizes,
in one run). Targets (issue 25): backup <= 1.5x raw list, restore <= 1.0x raw creates, peak
RSS flat between --objects and --big objects and under 250 MB. The load average is printed
with each figure (the machine's cores are shared).

Run: .venv/bin/python bench/bench_kubernetes.py [--objects 10000] [--big 50000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from statistics import median

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # for tests.harness

GROUP, VERSION, PLURAL = "leaderworkerset.x-k8s.io", "v1", "leaderworkersets"
NAMESPACES = 50


# -- children ------------------------------------------------------------------------------------
def child_raw_list(kubeconfig: str, context: str, page_size: int) -> dict:
    import kubernetes
    started = time.perf_counter()
    client = kubernetes.config.new_client_from_config(kubeconfig, context=context)
    api = kubernetes.client.CustomObjectsApi(client)
    count, token = 0, None
    while True:
        page = api.list_cluster_custom_object(GROUP, VERSION, PLURAL, limit=page_size, _continue=token)
        count += len(page["items"])
        token = page["metadata"].get("continue")
        if not token:
            break
    return {"seconds": time.perf_counter() - started, "objects": count}


def _exporter(kubeconfig: str, context: str, parallelism: int, page_size: int):
    from dr.contract import ExportContext
    from dr.exporters.kubernetes import KubernetesExporter
    options = KubernetesExporter.Options(kubeconfig=kubeconfig, context=context, parallelism=parallelism,
                                         page_size=page_size, list_timeout_seconds=120)
    return KubernetesExporter(ExportContext("cluster", options, base_dir="/"))


def _import_exporter() -> None:
    """Import the exporter before the clock starts, as the raw children import kubernetes
    first: module loading is interpreter start, not the operation measured. The exporter loads
    the kubernetes package only when it connects (dr audit and dr plugins read its declarations
    without it), so that is imported here too: it was 0.17 s inside dr's clock, not the raw one's."""
    import kubernetes.client  # noqa: F401
    import kubernetes.dynamic  # noqa: F401
    import kubernetes.utils.keepalive  # noqa: F401

    import dr.exporters.kubernetes  # noqa: F401


def child_dr_backup(kubeconfig: str, context: str, repo_dir: str, recipient: str, parallelism: int,
                    page_size: int) -> dict:
    _import_exporter()
    from dr.repository.repositories import Repository
    from dr.repository.stores.local import LocalStore
    from dr.repository.writing import SnapshotWriter
    from dr.kits.collecting import collecting_less
    repo = Repository(LocalStore(repo_dir))
    repo.init()
    started = time.perf_counter()
    with collecting_less():  # as dr.cli.main runs every command
        writer = SnapshotWriter(repo, [recipient])
        sink = writer.source("cluster", "kubernetes")
        exporter = _exporter(kubeconfig, context, parallelism, page_size)
        exporter.export(sink)
        snapshot = writer.finish("bench", [sink.commit()])
        writer.close()
    return {"seconds": time.perf_counter() - started, "artifacts": snapshot.stats["artifacts"],
            "bytes": snapshot.stats["bytes_read"], "findings": len(exporter.context.findings)}


def child_dr_restore(kubeconfig: str, context: str, repo_dir: str, identity: str, parallelism: int) -> dict:
    _import_exporter()
    import pyrage
    from dr.contract import RestoreRequest
    from dr.repository.catalogs import read_catalog
    from dr.repository.reading import ArtifactReader
    from dr.repository.repositories import Repository
    from dr.repository.stores.local import LocalStore
    repo = Repository(LocalStore(repo_dir))
    snapshot = repo.snapshots()[-1]
    artifacts = list(read_catalog(repo, snapshot.catalog))
    reader = ArtifactReader(repo, [pyrage.x25519.Identity.from_str(identity)])
    from dr.kits.collecting import collecting_less
    started = time.perf_counter()
    counts: dict[str, int] = {}
    with collecting_less():  # as dr.cli.main runs every command
        for outcome in _exporter(kubeconfig, "source", parallelism, 500).restore(
                artifacts, reader, RestoreRequest(to=f"{kubeconfig}:{context}")):
            counts[outcome.status.value] = counts.get(outcome.status.value, 0) + 1
    return {"seconds": time.perf_counter() - started, "counts": counts}


def child_raw_create(kubeconfig: str, context: str, objects_file: str, parallelism: int) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    import kubernetes
    with open(objects_file) as handle:
        objects = [json.loads(line) for line in handle]
    started = time.perf_counter()
    client = kubernetes.config.new_client_from_config(kubeconfig, context=context)
    client.configuration.connection_pool_maxsize = parallelism + 2
    api = kubernetes.client.CustomObjectsApi(client)

    def create(obj: dict) -> None:
        api.create_namespaced_custom_object(GROUP, VERSION, obj["metadata"]["namespace"], PLURAL, obj)
    with ThreadPoolExecutor(parallelism) as pool:
        list(pool.map(create, objects))
    return {"seconds": time.perf_counter() - started, "objects": len(objects)}


CHILDREN = {"raw-list": child_raw_list, "dr-backup": child_dr_backup, "dr-restore": child_dr_restore,
            "raw-create": child_raw_create}


# -- the parent ----------------------------------------------------------------------------------
def _run_child(name: str, *args) -> tuple[dict, float]:
    """(the child's JSON report plus its CPU seconds, its peak RSS in MB).

    The measured child is started by a small `--measure` process, not by this one: Linux
    carries the forking process's peak RSS into a child's ru_maxrss at exec, and this process
    holds the emulated clusters (hundreds of MB). The `--measure` process imports nothing heavy.
    """
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure", name, *map(str, args)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{name} failed: {out.stderr[-3000:]}")
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    return {**measured["report"], "cpu_s": measured["cpu_s"]}, measured["rss_mb"]


def measure_child(name: str, args: list[str]) -> dict:
    """Run the child, reap it with os.wait4 and report its own peak RSS and CPU time."""
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", name, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.stdout.read(), proc.stderr.read()  # read first: communicate() would reap the child
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(err.decode()[-3000:])
    return {"report": json.loads(out.decode().strip().splitlines()[-1]), "rss_mb": usage.ru_maxrss / 1024,
            "cpu_s": usage.ru_utime + usage.ru_stime}


def _lws_objects(start: int, stop: int) -> list[dict]:
    from tests.kubernetes.upstream import upstream
    template = upstream("lws/examples/leaderworkerset_v1_leaderworkerset.yaml")[0]
    out = []
    for i in range(start, stop):
        obj = copy.deepcopy(template)
        obj["metadata"] = {"name": f"lws-{i:06d}", "namespace": f"team-{i % NAMESPACES:02d}",
                           "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}}
        out.append(obj)
    return out


def _as_listed(cluster, objects: int) -> list[dict]:
    """The raw side's bodies: the objects as the source lists them (with the defaults its schema
    filled in, as dr's backup holds them), less what the server assigns, as `kubectl get -o json`
    piped into a create would send them. Posting the pre-default templates instead gave the raw
    side smaller bodies than the ones dr restores, and less for the server to do per create."""
    listed = cluster.list_objects(f"{GROUP}/{VERSION}", "LeaderWorkerSet")
    assert len(listed) == objects, (len(listed), objects)
    kept = ("name", "namespace", "labels", "annotations")
    return [{"apiVersion": o["apiVersion"], "kind": o["kind"], "spec": o["spec"],
             "metadata": {k: v for k, v in o["metadata"].items() if k in kept}} for o in listed]


def _prepare(cluster, with_objects: int = 0) -> None:
    """CRD + namespaces (+ objects) in `cluster`, created without HTTP."""
    from tests.kubernetes.upstream import upstream, wait_established
    crd = upstream("lws/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml")
    cluster.create_objects(crd)
    wait_established(cluster, crd)
    cluster.create_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{i:02d}"}}
                            for i in range(NAMESPACES)])
    _fill(cluster, 0, with_objects)


def _fill(cluster, start: int, stop: int) -> None:
    for chunk in range(start, stop, 2000):
        cluster.create_objects(_lws_objects(chunk, min(chunk + 2000, stop)))


def _backup_rounds(config: str, rounds: int, args, work: str, recipient: str) -> dict:
    raw, dr, raw_rss, dr_rss, raw_cpu, dr_cpu = [], [], [], [], [], []
    for round_ in range(rounds):  # alternate, so that load from elsewhere hits both alike
        report, rss = _without_gc(_run_child, "raw-list", config, "source", args.page_size)
        raw.append(report["seconds"])
        raw_cpu.append(report["cpu_s"])
        raw_rss.append(rss)
        repo = os.path.join(work, f"repo-{len(os.listdir(work))}")
        report, rss = _without_gc(_run_child, "dr-backup", config, "source", repo, recipient, args.parallelism,
                                  args.page_size)
        dr.append(report["seconds"])
        dr_cpu.append(report["cpu_s"])
        dr_rss.append(rss)
        _progress("backup", raw[-1], dr[-1])
    return {"raw_list_s": median(raw), "dr_backup_s": median(dr), "ratio": median(dr) / median(raw),
            "paired_ratio": _paired(dr, raw), "load": _load(),
            "raw_cpu_s": median(raw_cpu), "dr_cpu_s": median(dr_cpu),
            "raw_rss_mb": max(raw_rss), "dr_rss_mb": max(dr_rss), "repo": repo,
            "raw_rounds": raw, "dr_rounds": dr}


def _restore_rounds(source_config_clusters: dict, objects: int, rounds: int, args, repo: str, identity: str,
                    work: str) -> dict:
    from tests.harness import EmulatedCluster, write_kubeconfig
    objects_file = os.path.join(work, "objects.jsonl")
    with open(objects_file, "w") as handle:
        for obj in _as_listed(source_config_clusters["source"], objects):
            handle.write(json.dumps(obj) + "\n")
    raw, dr, dr_rss, counts, raw_cpu, dr_cpu = [], [], [], {}, [], []
    for round_ in range(rounds):
        # Each side restores into its own fresh emulator, started after the other one stopped:
        # an emulator holding the other side's objects in this process makes every garbage
        # collection here slower for whoever runs second (at 50,000 objects, a lot slower).
        for side in ("raw", "dr"):
            with EmulatedCluster(name=f"{side}-dest") as dest:
                _prepare(dest)
                gc.collect()
                gc.freeze()
                config = write_kubeconfig(os.path.join(work, "kubeconfig-restore"),
                                          {**source_config_clusters, f"{side}-dest": dest}, current="source")
                if side == "raw":
                    report, _ = _without_gc(_run_child, "raw-create", config, "raw-dest", objects_file,
                                            args.parallelism)
                    raw.append(report["seconds"])
                    raw_cpu.append(report["cpu_s"])
                    continue
                report, rss = _without_gc(_run_child, "dr-restore", config, "dr-dest", repo, identity,
                                          args.parallelism)
                dr.append(report["seconds"])
                dr_cpu.append(report["cpu_s"])
                dr_rss.append(rss)
                counts = report["counts"]
        _progress(f"restore {objects}", raw[-1], dr[-1])
    return {"raw_create_s": median(raw), "dr_restore_s": median(dr), "ratio": median(dr) / median(raw),
            "paired_ratio": _paired(dr, raw),
            "raw_objects_per_s": objects / median(raw), "dr_objects_per_s": objects / median(dr),
            "raw_cpu_s": median(raw_cpu), "dr_cpu_s": median(dr_cpu),
            "dr_rss_mb": max(dr_rss), "counts": counts, "raw_rounds": raw, "dr_rounds": dr, "load": _load()}


def _paired(dr: list[float], raw: list[float]) -> float:
    """The median of each round's dr / raw. The two sides of a round run back to back, so a
    machine that gets slower or faster for minutes (a shared host: the same child's CPU time
    doubled between two runs of an hour) moves both; the ratio of the two medians mixes rounds
    of different speeds and is printed beside it."""
    return median(d / r for d, r in zip(dr, raw))


def _without_gc(fn, *args):
    """fn(*args) with the collector off in this process, which serves the emulated API server:
    the destination's objects made since the last freeze are hundreds of thousands of dicts, and
    a full collection of them landed at a different point of each round (a pause of the server
    that either side could get), the largest part of the rounds' spread."""
    gc.disable()
    try:
        return fn(*args)
    finally:
        gc.enable()


def _progress(what: str, raw: float, dr: float) -> None:
    """Each round as it ends (a 50,000-object run takes a long while on a loaded machine)."""
    print(f"{what}: raw {raw:.2f} s, dr {dr:.2f} s ({dr / raw:.2f}x), load {_load()}", file=sys.stderr, flush=True)


def _load() -> str:
    """The 1, 5 and 15 minute load averages when a figure was taken (other jobs share the cores)."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=50_000, help="second size, for the RSS comparison")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--big-rounds", type=int, default=1)
    parser.add_argument("--parallelism", type=int, default=4)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.add_argument("--measure", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure_child(args.measure[0], args.measure[1:])))
        return
    if args.child:
        name, *rest = args.child
        types = {"parallelism": int, "page_size": int}
        names = CHILDREN[name].__code__.co_varnames[:CHILDREN[name].__code__.co_argcount]
        print(json.dumps(CHILDREN[name](*[types.get(n, str)(v) for n, v in zip(names, rest)])))
        return
    run_parent(args)


def run_parent(args) -> None:
    from dr.repository.encryption import generate_identity
    from tests.harness import EmulatedCluster, write_kubeconfig
    identity, recipient = generate_identity()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-kube-") as work, EmulatedCluster(name="source") as source:
        started = time.perf_counter()
        _prepare(source, args.objects)
        gc.freeze()  # the emulator stands in for an API server: keep its GC pauses out of the figures
        print(f"filled {args.objects} objects in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        config = write_kubeconfig(os.path.join(work, "kubeconfig"), {"source": source}, current="source")
        repos = os.path.join(work, "repos")
        os.makedirs(repos)
        results["backup"] = small = _backup_rounds(config, args.rounds, args, repos, recipient)
        results["restore"] = _restore_rounds({"source": source}, args.objects, args.rounds, args,
                                             small["repo"], identity, work)
        if args.big > args.objects:
            _fill(source, args.objects, args.big)
            gc.freeze()
            results["backup_big"] = big = _backup_rounds(config, args.big_rounds, args, repos, recipient)
            results["restore_big"] = _restore_rounds({"source": source}, args.big, args.big_rounds, args,
                                                     big["repo"], identity, work)
    report(args, results)


def report(args, results: dict) -> None:
    print(f"\nkubernetes exporter vs the raw client (LeaderWorkerSets in {NAMESPACES} namespaces, medians of "
          f"{args.rounds} rounds at {args.objects}, {args.big_rounds} at {args.big}; parallelism {args.parallelism}, "
          f"page size {args.page_size})")
    for suffix, objects in (("", args.objects), ("_big", args.big)):
        b, r = results.get("backup" + suffix), results.get("restore" + suffix)
        if b is None:
            continue
        print(f"  {objects} objects, backup : raw paginated list {b['raw_list_s']:.2f} s, dr backup "
              f"{b['dr_backup_s']:.2f} s -> {b['ratio']:.2f}x, round by round {b['paired_ratio']:.2f}x (target <= 1.5x); child CPU {b['raw_cpu_s']:.2f} s "
              f"vs {b['dr_cpu_s']:.2f} s; peak RSS raw {b['raw_rss_mb']:.0f} MB, dr {b['dr_rss_mb']:.0f} MB; "
              f"load {b['load']}")
        print(f"  {objects} objects, restore: raw creates {r['raw_create_s']:.2f} s ({r['raw_objects_per_s']:.0f}/s), "
              f"dr restore {r['dr_restore_s']:.2f} s ({r['dr_objects_per_s']:.0f}/s) -> {r['ratio']:.2f}x, "
              f"round by round {r['paired_ratio']:.2f}x "
              f"(target <= 1.0x); child CPU {r['raw_cpu_s']:.2f} s vs {r['dr_cpu_s']:.2f} s; peak RSS dr {r['dr_rss_mb']:.0f} MB; outcomes {r['counts']}; load {r['load']}")
    print(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
