"""`dr demo`'s walkthrough: the whole job on local stand-ins, so a newcomer sees dr work with no cluster.

Where it sits: in dr.demo, beside the drills (a layer under the CLI): `dr demo`
(dr.cli.commands.demo) parses its options and calls run_demo() with dr's own entry point, and the
walkthrough drives the real commands through it, as a script would. It builds the stand-ins
(dr.demo.stand_ins: a Git remote of platform declarations and a configuration directory with a
secret in it, standing for a cluster in region-a; a repository standing for the DR site in
region-b; an age key pair, the private half "kept offline"). Then it runs backup twice (the
second finds nothing changed), snapshots, verify --read-data, restores, and checks that what
came back equals what went in.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Callable
from urllib.parse import urlsplit

from dr.demo import mlflow as demo_mlflow
from dr.demo.checkpoints import TRAINED_SAVES, loads_equal, save_run, torch_available, train_run
from dr.demo.narrating import Narrator
from dr.demo.stand_ins import CHECKPOINTS_SOURCE, TRAINING_RUNS, build_stand_ins
from dr.demo.vault import VaultStandIn, read_back

# dr's exit codes as the walkthrough reads them: it drives `main` as any script does, by the
# documented table (README, "Exit codes"; dr.cli.exitcodes, which the CLI's layer keeps).
# tests/cli/test_demo.py holds them equal to that table.
OK, FAILURE, PARTIAL, BLOCKERS = 0, 1, 3, 4


def run_demo(directory: str, out: Narrator, kubeconfig: str | None, main: Callable[[list[str]], int],
             registries: tuple[str, str] | None = None, vault: VaultStandIn | None = None,
             mlflow: tuple[str, str] | None = None, training: bool = False) -> int:
    """Build the stand-ins and run the real commands through `main`, dr's own entry point
    (passed in: the demo is one of the commands main dispatches to, so it does not import it).
    `registries`: where the in-cluster registry is reached, and a DR registry to mirror into;
    `vault`: an OpenBao to back up and a fresh one to restore into (dr.demo.vault);
    `mlflow`: an MLflow server to fill with a small registry, and an empty one to restore it into;
    `training`: run-a trained for real and resumed from its DR copy at world sizes 1 and 3."""
    root = os.path.abspath(directory)
    if os.path.exists(root):
        shutil.rmtree(root)
    try:
        mlflow_plan = _mlflow_registry(mlflow[0], out) if mlflow else None
    except (OSError, RuntimeError) as error:  # requests' errors are OSErrors
        out.error(f"could not build the demo's model registry in the MLflow server {mlflow[0]} (--mlflow): {error}")
        return FAILURE
    plan_path, identity_path = build_stand_ins(root, kubeconfig, registries, vault, mlflow_plan)
    if not registries:
        out.note("no registries given (--registry, --dr-registry): the demo does not mirror the cluster's "
                 "images, so its audit keeps them as blockers (scripts/demo starts both registries)")
    if not vault:
        out.note("no Vault given (--vault, --vault-target, --vault-credentials): the demo does not back up "
                 "and restore an OpenBao snapshot (./scripts/demo --with-vault starts both servers)")
    if not mlflow:
        out.note("the MLflow model-registry part was left out (it needs two MLflow servers, ~850 MB of "
                 "MLflow): run ./scripts/demo --with-mlflow to include it")
    try:
        saved, trained = _training_run(root, plan_path, out, training)
    except (OSError, RuntimeError, subprocess.SubprocessError) as error:
        out.error(f"the demo's training run failed: {error}")
        return FAILURE
    if not training:
        out.note("the training recovery drills were left out (they train a tiny model with torchrun, about "
                 "30 s): run ./scripts/demo --with-training to include them")
    steps = [
        ("Back up every source (the repository is created on first use)", ["backup"]),
        ("Back up again: nothing changed, so no data is uploaded", ["backup"]),
        ("List the snapshots", ["snapshots"]),
        ("Verify every byte against its digest", ["verify", "--read-data"]),
        ("Restore the Git declarations to a new remote",
         ["restore", "--source", "platform-declarations", "--to", f"{root}/restored/{{name}}.git"]),
        ("Restore the configuration directory",
         ["restore", "--source", "platform-config", "--to", f"{root}/restored/files"]),
        ("Restore the secrets (needs the private key, kept apart from the backup job)",
         ["restore", "--source", "platform-secrets", "--to", f"{root}/restored/files",
          "--identity", identity_path]),
    ]
    if vault:
        steps.append(vault.restore_step(identity_path))
    if mlflow:
        steps.append(("Restore the model registry into the empty second MLflow server, version numbers kept",
                      ["restore", "--source", demo_mlflow.SOURCE_NAME, "--to", mlflow[1]]))
    if saved or trained:
        steps.append(("How often should the training runs checkpoint? (from the saves the backup measured)",
                      ["advise", "checkpoints"]))
        steps.append(("Restore the newest complete checkpoint where a trainer will look",
                      ["restore", "--source", "training", "--to", f"{root}/restored/checkpoints"]))
    for world_size in ("1", "3") if trained else ():
        steps.append((f"Resume run-a (it failed at world size 2, after step 25) from its DR copy at world size "
                      f"{world_size}: the RTO of training by phase, its continuity against the failed run, and "
                      "the RPO in GPU-hours",
                      ["drill", "--training", "run-a", "--world-size", world_size, "--failed", "cluster-a",
                       "--to", f"{root}/drills/training-{world_size}"]))
    if kubeconfig and registries:
        steps.append(("Restore the whole plan after losing cluster-a: every source in dependency order, the "
                      "image copies checked before the workloads, which now run the DR copies by digest",
                      _whole_plan_restore(root, identity_path, saved is not None or trained, vault, mlflow)))
    elif kubeconfig:
        steps.append(("Restore the cluster's objects into the empty recovery cluster, in dependency order",
                      ["restore", "--source", "cluster-a-config", "--to", "recovery", "--identity", identity_path]))
    for title, argv in steps:
        whole_plan = vault is not None and "--failed" in argv and "--training" not in argv
        code = _step_with(main, title, argv, plan_path, out, vault.whole_plan_environment() if whole_plan else {})
        if code == PARTIAL and "--training" in argv:
            out.note("the resumed run continued, but did not reach the failed run's throughput in its 10 steps "
                     "(a loaded machine): the drill says so, and the demo goes on")
            continue
        if code != OK:
            out.error(f"demo step failed with exit code {code}")
            return code
    compared = _compare(root, out, saved, trained)
    if compared == OK and vault and not read_back(vault, out):
        compared = FAILURE
    if compared == OK and kubeconfig and registries:
        compared = _recovered_images(kubeconfig, registries[1], out)
    if compared == OK and mlflow:
        compared = _same_champions(mlflow, out)
    return compared if compared != OK else _audit(main, root, plan_path, out, registries)


def _step_with(main, title: str, argv: list[str], plan_path: str, out: Narrator, environment: dict[str, str]) -> int:
    """A step with environment variables set for its duration (their values are never printed)."""
    saved = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    if environment:
        out.say(f"\n# with {', '.join(sorted(environment))} set (the restored Vault's token, from the credentials folder)")
    try:
        return _step(main, title, argv, plan_path, out)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _whole_plan_restore(root: str, identity_path: str, training: bool, vault: VaultStandIn | None,
                        mlflow: tuple[str, str] | None = None) -> list[str]:
    """`dr restore --failed cluster-a`: sources restored above are found unchanged."""
    to = {"platform-declarations": f"{root}/restored/{{name}}.git", "platform-config": f"{root}/restored/files",
          "platform-secrets": f"{root}/restored/files", "cluster-a-config": "recovery"}
    if training:
        to["training"] = f"{root}/restored/checkpoints"
    if vault:
        to["platform-vault"] = vault.target
    if mlflow:
        to[demo_mlflow.SOURCE_NAME] = mlflow[1]
    return ["restore", "--failed", "cluster-a", *(a for s, d in to.items() for a in ("--to", f"{s}={d}")),
            "--identity", identity_path]


def _recovered_images(kubeconfig: str, dr_registry: str, out: Narrator) -> int:
    """The trainer restored into the recovery cluster must run the DR copy, pinned by digest."""
    from kubernetes import client, config  # the demo's only direct look at a cluster

    api = client.AppsV1Api(config.new_client_from_config(kubeconfig, context="recovery"))
    image = api.read_namespaced_deployment("trainer", "team-a").spec.template.spec.containers[0].image
    if not image.startswith(f"{urlsplit(dr_registry).netloc}/") or "@sha256:" not in image:
        out.error(f"the restored trainer runs {image}, not its copy in the DR registry {dr_registry}")
        return FAILURE
    out.say(f"The restored trainer Deployment in the recovery cluster runs the DR copy of its image, by "
            f"digest: {image}")
    return OK


def _mlflow_registry(url: str, out: Narrator) -> tuple[str, str]:
    """The small registry in the first server; the plan's location and source for it."""
    artifacts = demo_mlflow.build_registry(url)
    versions = demo_mlflow.versions(url)
    out.say(f"A model registry in the MLflow server {url}: " + "; ".join(
        f"{model} versions {', '.join(numbers)}, champion -> {demo_mlflow.champions(url)[model]}"
        for model, numbers in versions.items()))
    return (demo_mlflow.MLFLOW_LOCATION.format(url=url, artifacts=artifacts),
            demo_mlflow.MLFLOW_SOURCE.format(name=demo_mlflow.SOURCE_NAME, url=url))


def _same_champions(mlflow: tuple[str, str], out: Narrator) -> int:
    """`models:/<name>@champion` must resolve to the same version number after the restore."""
    before, after = (demo_mlflow.champions(url) for url in mlflow)
    numbers = [demo_mlflow.versions(url) for url in mlflow]
    if before != after or numbers[0] != numbers[1]:
        out.error(f"the restored registry differs: champion {before} in {mlflow[0]}, {after} in {mlflow[1]}; "
                  f"versions {numbers[0]} and {numbers[1]}")
        return FAILURE
    out.say("In the restored MLflow server " + ", ".join(
        f"models:/{model}@champion resolves to version {version}" for model, version in after.items())
        + ", as in the first; the version numbers are the same (" + "; ".join(
            f"{model} {', '.join(found)}" for model, found in numbers[1].items()) + ").")
    return OK


def _training_run(root: str, plan_path: str, out: Narrator, training: bool) -> tuple[dict | None, bool]:
    """Real DCP checkpoints of a tiny model, and a `checkpoints` source in the plan (needs torch);
    with `training`, run-a trained for real by torchrun. (run-a's last saved state when the demo
    saved it itself, whether run-a was trained.)"""
    if not torch_available():
        out.note("torch is not installed: the demo skips its training checkpoints (pip install '.[demo]')")
        return None, False
    checkpoints = f"{root}/platform/checkpoints"
    runs = ""
    if training:
        log = f"{root}/platform/run-a.progress.jsonl"
        out.say("\n# Training run-a for real at world size 2 (torchrun, DCP); it fails after step 25")
        train_run(checkpoints, log)
        from dr.training.examples import plain_pytorch

        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--max-restarts", "1",
                   "--nproc-per-node", "{world_size}", plain_pytorch.__file__, "--root", "{checkpoint}-resumed",
                   "--steps", "40", "--resume", "{checkpoint}", "--step-seconds", "0.05"]
        runs = TRAINING_RUNS.format(command=json.dumps(command), log=log)
    saved = save_run(checkpoints, full=not training)
    with open(plan_path, "a", encoding="utf-8") as handle:
        handle.write(CHECKPOINTS_SOURCE.format(root=root, runs=runs))
    return (None if training else saved), training


def _step(main, title: str, argv: list[str], plan_path: str, out: Narrator) -> int:
    words = 2 if argv[0] == "advise" else 1  # `dr advise checkpoints --plan ...`
    argv = argv[:words] + ["--plan", plan_path] + argv[words:]
    out.say(f"\n$ dr {' '.join(argv)}\n# {title}")
    return main(argv)


def _audit(main, root: str, plan_path: str, out: Narrator, registries: tuple[str, str] | None = None) -> int:
    """The audit must find the planted problem: exit 4 here is the demo succeeding."""
    title = "Audit: if cluster-a is lost, can we recover from what is left?"
    code = _step(main, title, ["audit", "--failed", "cluster-a"], plan_path, out)
    main(["audit", "--plan", plan_path, "--failed", "cluster-a", "--format", "html",
          "--out", f"{root}/audit.html", "--quiet"])
    if code != BLOCKERS:
        out.error(f"the audit should have found the planted blocker (exit 4), got exit {code}")
        return FAILURE
    out.say("\nThe audit exits 4: it found the planted blocker. dr's own image lives in the in-cluster "
            "registry of cluster-a, so the tool needed to recover would be lost with the cluster. "
            + ("The images source has copied it to the DR registry: the fix is to point dr_image at that "
               "copy (the plan decides where the restore job is pulled from; dr does not change it). "
               if registries else "Fix: mirror the image to a registry outside cluster-a and point dr_image at it. ")
            + ("The trainer Deployment's image, from the same in-cluster registry, is 'remapped': its copy "
               "in the DR registry is what the restored Deployment runs. " if registries and _has_kubernetes(plan_path)
               else "The trainer Deployment's image sits in the same in-cluster registry: restored objects "
               "would point at an image nobody can pull. " if _has_kubernetes(plan_path) else "") +
            "The Git remote, also in cluster-a, is only 'remapped': its bundle in the snapshot can "
            "recreate it elsewhere. "
            + ("The MLflow service and its weights run in region-a beside the cluster, not in it, so losing "
               "cluster-a leaves them; the registry restored above came from the snapshot alone. "
               if _has_source_type(plan_path, "mlflow") else "")
            + f"The HTML report with the dependency picture is {root}/audit.html.")
    return OK


def _compare(root: str, out: Narrator, saved: dict | None = None, trained: bool = False) -> int:
    pairs = [(f"{root}/platform/config", f"{root}/restored/files/config"),
             (f"{root}/platform/secrets", f"{root}/restored/files/secrets")]
    if trained:  # the trained run's newest save, restored where the trainer looks
        step = f"run-a/step-{TRAINED_SAVES[-1]}"
        pairs.append((f"{root}/platform/checkpoints/{step}", f"{root}/restored/checkpoints/{step}"))
    for original, restored in pairs:
        difference = _tree_difference(original, restored)
        if difference:
            out.error(f"restored tree differs from {original}: {difference}")
            return FAILURE
    refs = [_refs(f"{root}/platform/declarations.git"), _refs(f"{root}/restored/platform.git")]
    if refs[0] != refs[1]:
        out.error(f"restored Git refs differ: {refs[0]} != {refs[1]}")
        return FAILURE
    if saved and not loads_equal(f"{root}/restored/checkpoints/run-a/step-200", saved):
        out.error("the restored checkpoint does not load with the saved tensors")
        return FAILURE
    loaded = " The restored checkpoint loads with dcp.load and its tensors equal the saved ones." if saved else ""
    out.say(f"\nRestored trees and Git refs are identical to the originals.{loaded} Everything is under {root}.")
    return OK


def _tree_difference(left: str, right: str) -> str:
    """'' when both trees hold the same files with the same bytes and modes; else what differs."""
    def listing(top: str) -> dict[str, tuple[bytes, int]]:
        found = {}
        for folder, _, names in os.walk(top):
            for name in names:
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    found[os.path.relpath(path, top)] = (handle.read(), os.stat(path).st_mode)
        return found

    a, b = listing(left), listing(right)
    if a.keys() != b.keys():
        return f"files {sorted(a.keys() ^ b.keys())}"
    return ", ".join(name for name in a if a[name] != b[name])


def _refs(repository: str) -> str:
    return subprocess.run(["git", "for-each-ref"], cwd=repository, capture_output=True, text=True,
                          check=True).stdout


def _has_kubernetes(plan_path: str) -> bool:
    return _has_source_type(plan_path, "kubernetes")


def _has_source_type(plan_path: str, kind: str) -> bool:
    with open(plan_path, encoding="utf-8") as handle:
        return f"type: {kind}" in handle.read()
