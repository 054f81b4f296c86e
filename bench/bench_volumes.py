"""Benchmark: dr's volume backup (the mover path) vs restic, on the same directory, one run.

Data sets (issue 26), each scaled by --scale (1.0 is the issue's size):
- `files-1m`: 10,625 files of 1 MiB (the public Velero figure: kopia 1 min 37 s, restic 5 min 25 s);
- `small`: 100,000 files of 512 B to 16 KiB;
- `big`: one file of 10 GiB.
All content is random (nothing compresses or deduplicates).

For each set and round, each tool takes a first backup into a fresh local repository, an
unchanged second backup, and a restore into an empty place. Both encrypt the data:
- dr: `dr backup` of a `volumes` source whose claim lives on an emulated API server with the
  test harness's CSI driver and kubelet stand-ins (tests/harness/volumes.py, jobs.py). The mover
  runs as a local process and is read through the emulated API server's pod proxy, as in a
  cluster. The stand-in's snapshots are copy-on-write (hard links), as Ceph RBD's, ZFS's or LVM
  thin's are, so a snapshot costs no copy of the data. `dr restore` creates the claim in a second
  emulated cluster and fills it through a mover.
- restic: `restic backup` of the claim's directory into a local repository, `restic restore`.
Both repositories are local folders on the same disk. Each restore is also timed with a `sync`
after it (`restore_synced_s`): restic leaves what it restored in the page cache, dr's mover
fsyncs it before it answers (sync_seconds). Peak RSS is dr's CLI process, and,
separately, the mover's (the pod's); restic is one process.
The emulated API server and the stand-ins run inside this benchmark process, on the same cores:
they stand for the API server and kubelet, which a real cluster runs elsewhere.

Run: .venv/bin/python bench/bench_volumes.py [--scale 1.0] [--sets files-1m,small,big] [--rounds 3]
Needs: restic (apt), the test extras (the emulated cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import yaml  # noqa: E402

from bench.common import measure, median  # noqa: E402
from dr.repository.encryption import generate_identity  # noqa: E402
from tests.harness import EmulatedCluster, write_kubeconfig  # noqa: E402
from tests.harness.jobs import JobRunner  # noqa: E402
from tests.harness.volumes import CsiStandIn, delete  # noqa: E402

NAMESPACE, CLAIM = "bench", "data"
BLOCK = 1 << 20


def write_random(path: str, size: int) -> None:
    with open(path, "wb") as handle:
        left = size
        while left:
            step = min(left, 8 * BLOCK)
            handle.write(os.urandom(step))
            left -= step


def make_set(name: str, root: str, scale: float) -> tuple[int, int]:
    """Fill `root` with data set `name` at `scale`; (files, bytes)."""
    if name == "files-1m":
        count = max(1, round(10_625 * scale))
        for index in range(count):
            folder = os.path.join(root, f"d{index // 1000:02d}")
            os.makedirs(folder, exist_ok=True)
            write_random(os.path.join(folder, f"f{index:05d}.bin"), BLOCK)
        return count, count * BLOCK
    if name == "small":
        count, total = max(1, round(100_000 * scale)), 0
        sizes = [512, 1024, 2048, 4096, 8192, 16384]
        for index in range(count):
            folder = os.path.join(root, f"d{index // 1000:03d}")
            os.makedirs(folder, exist_ok=True)
            size = sizes[index % len(sizes)]
            with open(os.path.join(folder, f"f{index:06d}"), "wb") as handle:
                handle.write(os.urandom(size))
            total += size
        return count, total
    if name == "big":
        size = max(BLOCK, int((10 << 30) * scale))
        write_random(os.path.join(root, "model.bin"), size)
        return 1, size
    raise SystemExit(f"unknown data set {name!r}: files-1m, small, big")


class MoverPeak:
    """Samples the peak RSS (VmHWM) of every mover process (the pod's) while it runs."""

    def __init__(self) -> None:
        self.peak_kb, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "MoverPeak":
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as handle:
                        if b"dr.exporters.volumes.mover" not in handle.read():
                            continue
                    with open(f"/proc/{pid}/status") as handle:
                        for line in handle:
                            if line.startswith("VmHWM:"):
                                self.peak_kb = max(self.peak_kb, int(line.split()[1]))
                except OSError:
                    continue
            self._stop.wait(0.05)


def dr_plan(work: str, kubeconfig: str, repo: str, recipient: str) -> str:
    """A volumes source, its content encrypted to one age recipient (restic encrypts everything too)."""
    plan = {"version": 1, "name": "bench-volumes", "protects_against": ["site-a"],
            "encryption": {"recipients": [recipient], "key_location": os.path.join(work, "age-identity")},
            "failure_domains": [{"name": "site-a", "kind": "site"}, {"name": "site-b", "kind": "site"}],
            "targets": [{"name": "repo", "url": repo, "domain": "site-b"}],
            "sources": [{"name": "vols", "type": "volumes", "kubeconfig": kubeconfig, "context": "source",
                         "image": "registry.dr.example/platform/dr:bench", "namespaces": [NAMESPACE]}]}
    path = os.path.join(work, f"plan-{os.path.basename(repo)}.yaml")
    with open(path, "w") as handle:
        yaml.safe_dump(plan, handle)
    return path


def run_dr(work: str, kubeconfig: str, recovery: EmulatedCluster, csi_b: CsiStandIn, env: dict) -> dict:
    repo = os.path.join(work, "dr-repo-" + os.urandom(4).hex())
    identity, recipient = generate_identity()
    with open(os.path.join(work, "age-identity"), "w") as handle:
        handle.write(identity + "\n")
    plan = dr_plan(work, kubeconfig, repo, recipient)
    dr = os.path.join(os.path.dirname(sys.executable), "dr")
    env = {**env, "DR_CACHE_DIR": os.path.join(work, f"cache-{os.path.basename(repo)}"),
           "DR_AGE_IDENTITY_FILE": os.path.join(work, "age-identity")}
    with MoverPeak() as backup_mover:
        first = measure([dr, "backup", "--plan", plan, "--json", "--quiet"], env=env, check=False)
        if first.returncode:
            raise RuntimeError(f"dr backup exited {first.returncode}: {first.stdout[-3000:]}{first.stderr[-2000:]}")
        second = measure([dr, "backup", "--plan", plan, "--json", "--quiet"], env=env)
    stats = json.loads(second.stdout)["results"][0]["stats"]
    with MoverPeak() as restore_mover:
        restore = measure([dr, "restore", "--plan", plan, "--source", "vols", "--to",
                           f"vols={kubeconfig}:recovery", "--json", "--quiet"], env=env)
        synced = restore.seconds + sync_seconds()
    restored = csi_b.directory_of(NAMESPACE, CLAIM)
    files = sum(len(f) for _, _, f in os.walk(restored))
    delete(recovery, "v1", "PersistentVolumeClaim", CLAIM, NAMESPACE)
    shutil.rmtree(repo, ignore_errors=True)
    return {"first_s": first.seconds, "second_s": second.seconds, "restore_s": restore.seconds,
            "restore_synced_s": synced,
            "first_rss_mb": first.peak_rss_mb, "second_rss_mb": second.peak_rss_mb,
            "restore_rss_mb": restore.peak_rss_mb, "mover_backup_rss_mb": backup_mover.peak_kb / 1024,
            "mover_restore_rss_mb": restore_mover.peak_kb / 1024,
            "second_uploaded": stats["bytes_uploaded"], "restored_files": files}


def run_restic(work: str, data: str, env: dict) -> dict:
    repo = os.path.join(work, "restic-repo-" + os.urandom(4).hex())
    env = {**env, "RESTIC_REPOSITORY": repo, "RESTIC_PASSWORD": "bench",
           "RESTIC_CACHE_DIR": os.path.join(work, f"cache-{os.path.basename(repo)}")}
    subprocess.run(["restic", "init"], env=env, check=True, capture_output=True)
    first = measure(["restic", "backup", "-q", data], env=env)
    second = measure(["restic", "backup", "--json", data], env=env)
    summary = [json.loads(line) for line in second.stdout.splitlines() if '"summary"' in line][-1]
    target = os.path.join(work, "restic-restored")
    restore = measure(["restic", "restore", "latest", "--target", target], env=env)
    synced = restore.seconds + sync_seconds()
    files = sum(len(f) for _, _, f in os.walk(target))
    shutil.rmtree(target, ignore_errors=True)
    shutil.rmtree(repo, ignore_errors=True)
    return {"first_s": first.seconds, "second_s": second.seconds, "restore_s": restore.seconds,
            "restore_synced_s": synced,
            "first_rss_mb": first.peak_rss_mb, "second_rss_mb": second.peak_rss_mb,
            "restore_rss_mb": restore.peak_rss_mb, "mover_backup_rss_mb": 0.0, "mover_restore_rss_mb": 0.0,
            "second_uploaded": summary.get("data_added", 0), "restored_files": files}


def bench_set(name: str, scale: float, rounds: int, work: str, env: dict) -> dict[str, list[dict]]:
    results: dict[str, list[dict]] = {"dr": [], "restic": []}
    with EmulatedCluster(name="source") as a, EmulatedCluster(name="recovery") as b:
        kubeconfig = str(write_kubeconfig(os.path.join(work, "kubeconfig"), {"source": a, "recovery": b}))
        with CsiStandIn(a, os.path.join(work, "csi-a"), copy_on_write=True) as csi_a, \
                CsiStandIn(b, os.path.join(work, "csi-b")) as csi_b, \
                JobRunner(a, csi_a, os.path.join(work, "pods-a"), programs={"python": sys.executable}), \
                JobRunner(b, csi_b, os.path.join(work, "pods-b"), programs={"python": sys.executable}):
            a.create_objects(claim_objects())
            b.create_objects(claim_objects()[:1])
            data = csi_a.directory_of(NAMESPACE, CLAIM)
            files, total = make_set(name, data, scale)
            print(f"\n{name}: {files} files, {total / 2**20:.0f} MiB; load {os.getloadavg()}", flush=True)
            for round_no in range(rounds):
                # alternate the order so neither tool always gets the warm page cache
                order = [("dr", lambda: run_dr(work, kubeconfig, b, csi_b, env)),
                         ("restic", lambda: run_restic(work, data, env))]
                for tool, run in order if round_no % 2 == 0 else reversed(order):
                    results[tool].append(run())
                    settle()
                    print(f"round {round_no + 1} {tool}: {results[tool][-1]}", flush=True)
    return results


def sync_seconds() -> float:
    """How long a sync takes right after a restore: what is still to be written before the
    restored data is on the disk. dr's mover fsyncs what it restored before it answers (the
    tree is renamed into place only then); restic 0.14 fsyncs none of its files (strace: two
    fsyncs in a restore, neither of the data), so its time ends with the data in the page
    cache. `restore_synced_s` is each tool's restore and this sync: the time to a durable
    restore, the same for both."""
    started = time.perf_counter()
    os.sync()
    return time.perf_counter() - started


def settle(longest: float = 60.0) -> None:
    """Let the disk finish what the last run left (its tree deleted by the stand-in or by the
    bench, writeback of what it wrote) before the other tool starts: on this machine's disk a
    restore of 100,000 files that began while the other tool's 100,000 were being deleted took
    up to three times as long, so whichever tool ran second in a round paid for the first."""
    time.sleep(1.0)  # the stand-in deletes a deleted claim's directory from its own loop
    os.sync()
    deadline = time.monotonic() + longest
    while time.monotonic() < deadline:
        with open("/proc/meminfo") as handle:
            held = sum(int(line.split()[1]) for line in handle if line.startswith(("Dirty:", "Writeback:")))
        if held < 16 << 10:  # kB
            return
        time.sleep(0.5)


def claim_objects() -> list[dict]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": CLAIM, "namespace": NAMESPACE},
             "spec": {"storageClassName": "csi-hostpath-sc", "accessModes": ["ReadWriteOnce"],
                      "resources": {"requests": {"storage": "20Gi"}}}}]


def report(name: str, results: dict[str, list[dict]]) -> None:
    keys = ["first_s", "second_s", "restore_s", "restore_synced_s", "first_rss_mb", "second_rss_mb", "restore_rss_mb",
            "mover_backup_rss_mb", "mover_restore_rss_mb", "second_uploaded", "restored_files"]
    med = {tool: {k: median([r[k] for r in runs]) for k in keys} for tool, runs in results.items()}
    print(f"\nmedians, {name}:")
    print(f"{'':24}{'dr':>14}{'restic':>14}{'dr/restic':>12}")
    for key in keys:
        d, r = med["dr"][key], med["restic"][key]
        ratio = f"{d / r:.2f}" if r else "-"
        print(f"{key:24}{d:>14.2f}{r:>14.2f}{ratio:>12}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0, help="of the issue's sizes (default 1.0)")
    parser.add_argument("--sets", default="files-1m,small,big")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(root, "dr")], check=True)
    env = {**os.environ, "PYTHONPATH": root}
    for name in args.sets.split(","):
        work = tempfile.mkdtemp(prefix=f"dr-bench-volumes-{name}-")
        started = time.perf_counter()
        try:
            report(name, bench_set(name, args.scale, args.rounds, work, env))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"({name}: {time.perf_counter() - started:.0f} s in all)", flush=True)


if __name__ == "__main__":
    main()
