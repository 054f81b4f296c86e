"""`dr demo`: back up, list, verify and restore local stand-ins; this module parses and prints, the
walkthrough itself is dr.demo."""

from __future__ import annotations

import argparse

from dr.cli.arguments import CommandSpec, UsageError
from dr.cli.commands import help_of
from dr.cli.exitcodes import Exit
from dr.cli.output import Output
from dr.demo.vault import VaultStandIn
from dr.demo.walkthrough import run_demo


EPILOG = ("--kubeconfig FILE (the global option): a kubeconfig with contexts 'cluster-a' (a stand-in cluster "
          "to back up) and 'recovery' (an empty one to restore into); scripts/demo starts emulated ones.")


def arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = EPILOG
    p.add_argument("--dir", default="demo-output", help="where the demo builds its stand-ins (default ./demo-output)")
    p.add_argument("--registry", metavar="URL", help="where the stand-in cluster's in-cluster registry "
                   "(registry.kube-system.svc.cluster.local:5000) is reached; with --dr-registry, the demo "
                   "mirrors the cluster's images to the DR registry (scripts/demo starts both)")
    p.add_argument("--dr-registry", metavar="URL", help="a DR registry, outside cluster-a, to mirror images into")
    p.add_argument("--vault", metavar="URL", help="an OpenBao (or Vault) raft server standing for cluster-a's "
                   "Vault; with --vault-target and --vault-credentials, the demo backs up its snapshot and "
                   "restores it into the target (./scripts/demo --with-vault starts both)")
    p.add_argument("--vault-target", metavar="URL", help="a fresh, initialised and unsealed raft OpenBao to restore into")
    p.add_argument("--vault-credentials", metavar="DIR", help="a folder holding 'token' (the --vault server's), "
                   "'unseal-keys' (its shares, one a line) and 'target-token' (the target's); never printed")
    p.add_argument("--with-mlflow", action="store_true", help="include the model-registry part: back up a small "
                   "registry in the MLflow server --mlflow and restore it into --mlflow-restore "
                   "(./scripts/demo --with-mlflow installs MLflow and starts both)")
    p.add_argument("--with-training", action="store_true", help="include the training recovery drills: train "
                   "run-a for real (torchrun, world size 2, DCP) until it fails, back it up, and resume it from its "
                   "DR copy at world sizes 1 and 3 with dr drill --training (needs torch: the demo extra)")
    p.add_argument("--mlflow", metavar="URL", help="an empty MLflow server (a service in region-a, beside cluster-a) that "
                   "the demo fills with a small model registry")
    p.add_argument("--mlflow-restore", metavar="URL", help="an empty MLflow server that the demo restores the "
                   "registry into")


def run(args: argparse.Namespace, out: Output) -> int:
    if out.as_json:  # its stdout is the walkthrough's text: one JSON document could not carry it
        raise UsageError("dr demo is a walkthrough for a person and prints text; run it without --json "
                         "(every command it shows takes --json)")
    if args.context:
        raise UsageError("--context: the demo's contexts are 'cluster-a' and 'recovery' of --kubeconfig FILE")
    registries = (args.registry, args.dr_registry) if args.registry and args.dr_registry else None
    vault = VaultStandIn(args.vault, args.vault_target, args.vault_credentials) \
        if args.vault and args.vault_target and args.vault_credentials else None
    if (args.with_mlflow or args.mlflow or args.mlflow_restore) and not (args.mlflow and args.mlflow_restore):
        out.error("the demo's MLflow part needs two empty MLflow servers: --mlflow URL and --mlflow-restore URL "
                  "(./scripts/demo --with-mlflow starts them)")
        return Exit.USAGE
    mlflow = (args.mlflow, args.mlflow_restore) if args.mlflow else None
    return run_demo(args.dir, out, args.kubeconfig, args.main, registries, vault, mlflow, args.with_training)


DEMO = CommandSpec("demo", help_of("demo"), arguments, run)
