"""Benchmark: copying images registry A -> registry B, dr's images exporter vs skopeo.

20 images (--images) of about --size-mib in all, every one built on the same base layers
(--base-share of the total), pushed into registry A (CNCF distribution 2.8, Debian's
`docker-registry`). Then, each tool into its own fresh registry (a distribution registry
deduplicates blobs across repositories on disk, so a shared destination would favour whoever
runs second):
  1. `dr backup` of a plan whose `images` source lists the 20 images (first copy);
  2. `skopeo copy` once per image, the way people script it;
  3. `skopeo sync --src yaml` of the same 20 images in one call;
  4. each again, unchanged (dr: second backup; skopeo: the same commands again);
  5. `dr backup` of a plan listing no image: the fixed cost of a dr process (start, plan, repository);
  6. unless --big-mib 0, `dr backup` of one image with a --big-mib layer: peak RSS.
skopeo's blob-info cache lives in a fresh $HOME per run (no memory of other runs).

With --store repository, the same images go into dr's own repository instead (`store:
repository`) and the peers are the closest skopeo has: `skopeo copy docker://... oci:DIR:NAME`
once per image into one OCI layout (content-addressed: a shared blob is stored once) and
`skopeo sync --dest dir` in one call (a directory per image, no sharing). Each again unchanged
(but `sync --dest dir`, which refuses to overwrite an image's directory);
the bytes each left on disk; then the way back into a fresh registry: `dr restore --source
images --to REGISTRY` against `skopeo copy oci:DIR:NAME docker://...` once per image.

Wall time and peak RSS (VmHWM) per command, printed as a table (JSON with --json).

Run: .venv/bin/python bench/bench_images.py [--size-mib 1024] [--images 20] [--big-mib 256]
                                            [--store registries|repository]
Needs: docker-registry and skopeo (apt; scripts/install-test-deps installs both).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import measure, median, two_site_plan  # noqa: E402
from tests.harness.registries import DistributionRegistry, push_file_blob, push_image  # noqa: E402

SOURCES = """  - name: images
    type: images
    to: ["{to}"]
    images: {images}
"""
HELD = """  - name: images
    type: images
    store: repository
    images: {images}
"""
SKOPEO_TLS = ["--src-tls-verify=false", "--dest-tls-verify=false"]


def random_file(folder: str, name: str, size: int) -> str:
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        left = size
        while left > 0:
            n = min(left, 4 << 20)
            handle.write(os.urandom(n))
            left -= n
    return path


def build(source: DistributionRegistry, work: str, count: int, total: int, base_share: float) -> list[str]:
    """`count` images on two shared base layers; `total` bytes in all (the base counted once)."""
    client = source.client()
    base_size = int(total * base_share)
    own = (total - base_size) // count
    base = [random_file(work, f"base{i}", size) for i, size in enumerate((base_size * 2 // 3, base_size // 3))]
    refs = []
    for n in range(count):
        path = f"bench/app-{n:02d}"
        layers = [push_file_blob(client, path, f) for f in base]
        mine = random_file(work, "own", own)
        layers.append(push_file_blob(client, path, mine))
        os.unlink(mine)
        push_image(client, path, "1.0", layers, note=str(n))
        refs.append(f"{source.host}/{path}:1.0")
    return refs


DR = os.path.join(os.path.dirname(sys.executable), "dr")


def write_plan(work: str, name: str, sources: str) -> str:
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    plan = os.path.join(folder, "plan.yaml")
    with open(plan, "w") as handle:
        handle.write(two_site_plan("bench-images", os.path.join(folder, "repo"), sources))
    return plan


def dr_backup(work: str, name: str, to: str | None, refs: list[str]):
    """`dr backup` of a plan listing `refs`: to the DR registry `to`, or (None) into the repository."""
    sources = SOURCES.format(to=to, images=json.dumps(refs)) if to else HELD.format(images=json.dumps(refs))
    plan = write_plan(work, name, sources)
    return lambda: measure([DR, "backup", "--plan", plan, "--quiet"])


def per_image(argv_of, refs: list[str], home: str):
    """One skopeo command per image (`argv_of(ref)`), the way people script it: the summed time."""
    env = {**os.environ, "HOME": home}

    def run():
        runs = [measure(argv_of(ref), env=env) for ref in refs]
        return type(runs[0])(sum(r.seconds for r in runs), max(r.peak_rss_mb for r in runs), "")
    return run


def skopeo_each(refs: list[str], dest: str, home: str):
    return per_image(lambda ref: ["skopeo", "copy", *SKOPEO_TLS, f"docker://{ref}",
                                  f"docker://{dest}/{ref.split('/', 1)[1]}"], refs, home)


def skopeo_sync(refs: list[str], source: str, dest: str, home: str, work: str, kind: str = "docker"):
    """`skopeo sync --src yaml` of the images in one call, into a registry (`docker`) or a folder (`dir`)."""
    spec = os.path.join(work, f"sync-{kind}.yaml")
    with open(spec, "w") as handle:
        repos = {ref.split("/", 1)[1].rsplit(":", 1)[0]: ["1.0"] for ref in refs}
        handle.write(json.dumps({source: {"tls-verify": False, "images": repos}}))
    env = {**os.environ, "HOME": home}
    tls = ["--dest-tls-verify=false"] if kind == "docker" else []
    return lambda: measure(["skopeo", "sync", "--src", "yaml", "--dest", kind, *tls, spec, dest], env=env)


def skopeo_oci(refs: list[str], layout: str, home: str):
    """`skopeo copy docker://REF oci:LAYOUT:NAME` once per image, into one OCI layout."""
    return per_image(lambda ref: ["skopeo", "copy", "--src-tls-verify=false", f"docker://{ref}",
                                  f"oci:{layout}:{_name(ref)}"], refs, home)


def _name(ref: str) -> str:
    return ref.split("/", 1)[1].replace("/", "-").replace(":", "-")


def disk_mib(folder: str) -> float:
    total = 0
    for root, _, files in os.walk(folder):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return round(total / (1 << 20), 1)


def held_rows(args, work: str, source, registry, refs: list[str]) -> dict:
    """--store repository: into dr's repository vs skopeo into an OCI layout and dir/, then back out."""
    homes = {n: tempfile.mkdtemp(dir=work) for n in ("oci", "dir", "back")}
    layout, synced = os.path.join(work, "oci-layout"), os.path.join(work, "sync-dir")
    os.makedirs(synced)
    tools = {"dr backup, store: repository": (dr_backup(work, "dr", None, refs), os.path.join(work, "dr", "repo")),
             "skopeo copy to one OCI layout, per image": (skopeo_oci(refs, layout, homes["oci"]), layout),
             "skopeo sync --dest dir, one call": (skopeo_sync(refs, source.host, synced, homes["dir"], work, "dir"),
                                                  synced)}
    rows = {}
    for name, (tool, folder) in tools.items():
        first = tool()
        rows[name] = {"first_s": round(first.seconds, 2), "first_rss_mb": round(first.peak_rss_mb),
                      "disk_mib": disk_mib(folder)}
        if "--dest dir" in name:
            continue  # it refuses to overwrite an image directory: there is no unchanged run
        second = tool()
        rows[name].update(unchanged_s=round(second.seconds, 2), unchanged_rss_mb=round(second.peak_rss_mb))
    plan = os.path.join(work, "dr", "plan.yaml")
    back = measure([DR, "restore", "--plan", plan, "--source", "images", "--to", f"{registry('dr-back').url}/back",
                    "--quiet"])
    rows["dr restore --to a fresh registry"] = {"first_s": round(back.seconds, 2), "first_rss_mb": round(back.peak_rss_mb)}
    dest = registry("skopeo-back").host
    peer = per_image(lambda ref: ["skopeo", "copy", "--dest-tls-verify=false", f"oci:{layout}:{_name(ref)}",
                                  f"docker://{dest}/back/{ref.split('/', 1)[1]}"], refs, homes["back"])()
    rows["skopeo copy oci: -> a fresh registry, per image"] = {"first_s": round(peer.seconds, 2),
                                                               "first_rss_mb": round(peer.peak_rss_mb)}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--images", type=int, default=20)
    parser.add_argument("--base-share", type=float, default=0.4)
    parser.add_argument("--big-mib", type=int, default=256)
    parser.add_argument("--store", choices=("registries", "repository"), default="registries")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of the copies (fresh destinations each); "
                        "the figures are medians")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="dr-bench-images-")
    servers = []
    try:
        def registry(name):
            servers.append(DistributionRegistry(name=f"bench-{name}").start())
            return servers[-1]
        source = registry("a")
        refs = build(source, work, args.images, args.size_mib << 20, args.base_share)
        if args.store == "repository":
            rows = held_rows(args, work, source, registry, refs)
            if args.big_mib:
                rows.update(big_row(args, work, source, None))
            return report(rows, args)
        rounds = [copy_round(work, source, registry, refs, n) for n in range(args.rounds)]
        rows = medians(rounds)
        if args.big_mib:
            rows.update(big_row(args, work, source, f"{registry('dr-big').url}/big"))
        report(rows, args)
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


def copy_round(work: str, source, registry, refs: list[str], n: int) -> dict:
    """One round: each tool into its own fresh registry, first and unchanged; dr's fixed cost."""
    dr_dest, each_dest, sync_dest = registry(f"dr{n}"), registry(f"skopeo-copy{n}"), registry(f"skopeo-sync{n}")
    homes = {k: tempfile.mkdtemp(dir=work) for k in ("each", "sync")}
    tools = {"dr backup (images exporter)": dr_backup(work, f"dr{n}", f"{dr_dest.url}/mirror", refs),
             "skopeo copy, once per image": skopeo_each(refs, f"{each_dest.host}/mirror", homes["each"]),
             "skopeo sync --src yaml, one call": skopeo_sync(refs, source.host, f"{sync_dest.host}/mirror",
                                                              homes["sync"], work)}
    rows = {}
    for name, tool in tools.items():
        first = tool()
        second = tool()
        rows[name] = {"first_s": round(first.seconds, 2), "first_rss_mb": round(first.peak_rss_mb),
                      "unchanged_s": round(second.seconds, 2), "unchanged_rss_mb": round(second.peak_rss_mb)}
    empty = dr_backup(work, f"dr-empty{n}", f"{dr_dest.url}/empty", [])()
    rows["dr backup, no image (its fixed cost)"] = {"first_s": round(empty.seconds, 2),
                                                    "first_rss_mb": round(empty.peak_rss_mb)}
    each_dest.stop()  # the skopeo destinations are done with; dr's stays for the big layer
    sync_dest.stop()
    return rows


def medians(rounds: list[dict]) -> dict:
    """Per row and figure, the median over the rounds (a single round's values with one round)."""
    return {name: {key: round(median([r[name][key] for r in rounds]), 2) for key in row}
            for name, row in rounds[0].items()}


def big_row(args, work: str, source, to: str | None) -> dict:
    """One image with a --big-mib layer, to the DR registry `to` or (None) into the repository."""
    client = source.client()
    layer = push_file_blob(client, "bench/big", random_file(work, "big", args.big_mib << 20))
    push_image(client, "bench/big", "1.0", [layer])
    big = dr_backup(work, "dr-big", to, [f"{source.host}/bench/big:1.0"])()
    return {f"dr backup, one {args.big_mib} MiB layer": {"first_s": round(big.seconds, 2),
                                                         "first_rss_mb": round(big.peak_rss_mb)}}


def report(rows: dict, args) -> None:
    load = os.getloadavg()[0]
    if args.json:
        print(json.dumps({"size_mib": args.size_mib, "images": args.images, "store": args.store, "load": load,
                          "rounds": args.rounds,
                          "rows": rows}, indent=1))
        return
    print(f"{args.images} images, {args.size_mib} MiB in all ({args.base_share:.0%} shared base); "
          f"medians of {args.rounds} round(s); load {load:.1f}")
    print(f"{'':48} {'first s':>8} {'RSS MB':>7} {'unchanged s':>12} {'RSS MB':>7} {'disk MiB':>9}")
    for name, r in rows.items():
        print(f"{name:48} {r['first_s']:>8} {r['first_rss_mb']:>7} {r.get('unchanged_s', ''):>12} "
              f"{r.get('unchanged_rss_mb', ''):>7} {r.get('disk_mib', ''):>9}")
    if args.store == "repository":
        dr, each = rows["dr backup, store: repository"], rows["skopeo copy to one OCI layout, per image"]
        back, peer = rows["dr restore --to a fresh registry"], rows["skopeo copy oci: -> a fresh registry, per image"]
        print(f"dr / skopeo copy to oci: first {dr['first_s'] / each['first_s']:.2f}; dr unchanged / dr first: "
              f"{dr['unchanged_s'] / dr['first_s']:.2%}; restore dr / skopeo {back['first_s'] / peer['first_s']:.2f}")
        return
    dr = rows["dr backup (images exporter)"]
    each = rows["skopeo copy, once per image"]
    print(f"dr / skopeo copy per image: first {dr['first_s'] / each['first_s']:.2f}; "
          f"dr unchanged / dr first: {dr['unchanged_s'] / dr['first_s']:.2%}")


if __name__ == "__main__":
    main()
