"""Benchmark: dr's start-up as the container image runs it, before and after the Dockerfile's
bytecode step.

The image's base (python:3.11-slim) deletes every .pyc of the standard library when it is built,
and at run time nothing may write one (a non-root user; in the CronJob a read-only root
filesystem). No Docker engine is needed to reproduce that: this script copies the interpreter
that runs it (its `sys.base_prefix`, which must be a relocatable build such as pyenv's or the
image's /usr/local, not Debian's /usr) without any .pyc and without test folders, as the base
image's build leaves it, installs the project into it with pip from the same files the image's
build context holds (pyproject.toml, README.md, dr/), and times, with PYTHONDONTWRITEBYTECODE=1
as the image sets it:
  * `dr --version`;
  * `dr backup` of a one-file `files` plan into a new local repository;
  * the same backup again, the file unchanged (what a CronJob runs most);
  * `dr snapshots` of that repository;
first as pip leaves it, then after running the Dockerfile's own `RUN python -m compileall ...`
line (read from the Dockerfile, with /usr/local/lib/python3.11 pointed at the copy). Medians and
peak RSS per command; the ratio after/before.

Run: .venv/bin/python bench/bench_image_startup.py [--rounds 7] [--json]
Needs: network access to PyPI (pip installs dr's dependencies into the copy), ~1 GB of disk.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import measure, median, two_site_plan  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# what the base image's build deletes (docker-library/python): test folders and every .pyc
_DROPPED_DIRS = {"test", "tests", "idle_test", "__pycache__", "site-packages"}
ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def copy_interpreter(dest: str) -> str:
    """sys.base_prefix copied without bytecode, test folders or installed packages; its python."""
    base = sys.base_prefix
    if base in ("/usr", "/"):
        sys.exit(f"{base} is a system Python, not a relocatable one: run this with a pyenv or "
                 "python.org build (e.g. pyenv's), as the image's /usr/local is")

    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n in _DROPPED_DIRS or n.endswith((".pyc", ".pyo"))}

    shutil.copytree(base, dest, symlinks=True, ignore=ignore)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    os.makedirs(os.path.join(dest, "lib", version, "site-packages"), exist_ok=True)
    return os.path.join(dest, "bin", version)


def install(python: str, work: str) -> None:
    """pip install of the image's build context (.dockerignore: pyproject.toml, README.md, dr)."""
    context = os.path.join(work, "src")
    os.makedirs(context)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), context)
    shutil.copytree(os.path.join(ROOT, "dr"), os.path.join(context, "dr"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for argv in ([python, "-m", "ensurepip"], [python, "-m", "pip", "install", "--no-cache-dir", context]):
        done = subprocess.run(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.exit(f"{' '.join(argv[1:4])} failed (exit {done.returncode}): {done.stderr[-2000:]}")


def compile_step(python: str, prefix: str) -> list[str]:
    """The Dockerfile's `RUN python -m compileall ...` line, aimed at the copy."""
    with open(os.path.join(ROOT, "Dockerfile")) as handle:
        found = re.search(r"^RUN (python -m compileall .*)$", handle.read(), re.MULTILINE)
    if not found:
        sys.exit("Dockerfile: no `RUN python -m compileall ...` line to measure")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    argv = shlex.split(found.group(1).replace("/usr/local/lib/python3.11", os.path.join(prefix, "lib", version)))
    return [python] + argv[1:]


def stdlib_pycs(prefix: str) -> int:
    count = 0
    for folder, dirs, files in os.walk(os.path.join(prefix, "lib")):
        dirs[:] = [d for d in dirs if d != "site-packages"]
        count += sum(f.endswith(".pyc") for f in files)
    return count


def time_commands(dr: str, work: str, rounds: int) -> dict[str, dict]:
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    with open(os.path.join(data, "settings.yaml"), "w") as handle:
        handle.write("replicas: 2\n")
    plan = os.path.join(work, "plan.yaml")
    repo = os.path.join(work, "repo")
    with open(plan, "w") as handle:
        handle.write(two_site_plan("bench-startup", repo, f"  - {{name: config, type: files, paths: [{data}]}}\n", ""))
    commands = {"dr --version": [dr, "--version"],
                "dr backup (one file, new repository)": [dr, "backup", "--plan", plan, "--quiet"],
                # issue 27's start-up target: the cron case, a backup with nothing new to store
                "dr backup (one file, unchanged)": [dr, "backup", "--plan", plan, "--quiet"],
                "dr snapshots": [dr, "snapshots", "--plan", plan]}
    runs: dict[str, list] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            if "new repository" in name:
                shutil.rmtree(repo, ignore_errors=True)
            runs[name].append(measure(argv, env=ENV))  # raises, with its stderr, if dr fails
    return {name: {"seconds": median([r.seconds for r in rs]), "rss_mb": median([r.peak_rss_mb for r in rs])}
            for name, rs in runs.items()}


# issue 27, item 4: in the image's layout, after the compile step
TARGETS = {"dr --version": 0.1, "dr backup (one file, unchanged)": 0.3}


def import_times(python: str, work: str) -> dict:
    """`python -X importtime` of the unchanged backup: the total of every module's own time and
    the largest imports that dr's entry point makes directly (the tree's first level under it)."""
    argv = [python, "-X", "importtime", "-m", "dr", "backup", "--plan", os.path.join(work, "plan.yaml"), "--quiet"]
    done = subprocess.run(argv, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the importtime run failed (exit {done.returncode}): {done.stderr[-2000:]}")
    rows = [m.groups() for m in re.finditer(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$",
                                            done.stderr, re.MULTILINE)]
    total = sum(int(own) for own, _, _, _ in rows) / 1000
    top = [(name, int(cumulative) / 1000) for _, cumulative, indent, name in rows if len(indent) <= 3]
    return {"total_ms": total, "largest": sorted(top, key=lambda r: -r[1])[:10]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="dr-bench-image-")
    try:
        prefix = os.path.join(work, "python")
        python = copy_interpreter(prefix)
        install(python, work)
        dr = os.path.join(prefix, "bin", "dr")
        before = time_commands(dr, work, args.rounds)
        step = compile_step(python, prefix)
        done = subprocess.run(step, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.exit(f"the Dockerfile's compile step failed (exit {done.returncode}): {done.stderr[-2000:]}")
        pycs = stdlib_pycs(prefix)
        after = time_commands(dr, work, args.rounds)
        imports = import_times(python, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report = {"rounds": args.rounds, "stdlib_pycs_after": pycs, "before": before, "after": after,
              "imports": imports, "load_average": os.getloadavg()}
    if args.json:
        print(json.dumps(report))
        return
    print(f"{args.rounds} rounds (medians), load average after: {', '.join(f'{v:.2f}' for v in os.getloadavg())}; "
          f"the compile step wrote {pycs:,} standard-library .pyc files")
    print(f"  {'command':40} {'before, s':>10} {'after, s':>10} {'after/before':>13} {'RSS MB':>13}")
    for name in before:
        b, a = before[name], after[name]
        print(f"  {name:40} {b['seconds']:10.2f} {a['seconds']:10.2f} {a['seconds'] / b['seconds']:13.2f} "
              f"{b['rss_mb']:6.0f} /{a['rss_mb']:5.0f}")
    for name, target in TARGETS.items():
        seconds = after[name]["seconds"]
        print(f"  target: {name} under {target} s: {seconds:.2f} s, {'met' if seconds < target else 'NOT met'}")
    print(f"  -X importtime of the unchanged backup (after): {imports['total_ms']:.0f} ms of imports; the largest "
          "top-level ones (cumulative ms): " + ", ".join(f"{n} {ms:.0f}" for n, ms in imports["largest"]))


if __name__ == "__main__":
    main()
