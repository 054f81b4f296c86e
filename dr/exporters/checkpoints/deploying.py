"""What a checkpoints source needs in a pod (contract v2 run_needs): its roots, DR copies and
tiers (S3 endpoints with the AWS keys, or directories), and with `shards: {executor: kubernetes}`
the right to run its shards as an Indexed Job in one namespace.

Roots are read; a DR copy in a directory is written, which RunNeeds.paths (read) cannot say, so
a note does. The shards' Job and its ConfigMap are written through the API: namespaced ApiWrites
(a Role there, never a cluster-wide grant), and the API server as an endpoint.
"""

from __future__ import annotations

import os

from dr.exporters.checkpoints.options import CheckpointsOptions, ShardCluster
from dr.contract import AWS_CREDENTIALS, ApiWrite, RunNeeds

IN_CLUSTER_API = "https://kubernetes.default.svc:443"
SHARD_WRITES = (ApiWrite("batch", ("jobs",), ("create", "get", "list", "watch", "delete"),
                         why="the Indexed Job that runs a checkpoint copy's shards"),
                ApiWrite("", ("configmaps",), ("create", "patch", "delete"),
                         why="the shard pointer the Job reads (owned by the Job)"))


def run_needs(options: CheckpointsOptions, base_dir: str) -> RunNeeds:
    copies = [*([options.dr_copy] if options.dr_copy else []), *(t.to for t in options.tiers if t.to)]
    needs = RunNeeds()
    for place in [*options.roots, *copies]:
        path = os.path.normpath(os.path.join(base_dir, place.url))
        if place.is_s3:
            needs.endpoints.append(place.endpoint_url or f"https://s3.{place.region or 'us-east-1'}.amazonaws.com")
        elif place in options.roots:
            needs.paths.append(path)
        else:
            needs.notes.append(f"DR copies are written to the directory {path}: mount a writable volume "
                               "there yourself (rendered mounts are read-only)")
        if place.profile:
            needs.notes.append(f"{place.url}: AWS profile {place.profile!r} needs an AWS config file in the "
                               "pod (AWS_CONFIG_FILE); mount it yourself")
    if needs.endpoints:
        needs.credentials += AWS_CREDENTIALS
    if options.shards is not None and options.shards.executor == "kubernetes":
        _shard_job(options.shards.kubernetes, needs)
    return needs


def _shard_job(cluster: ShardCluster, needs: RunNeeds) -> None:
    if cluster.kubeconfig:
        needs.notes.append(f"shards run as Indexed Jobs in the cluster of {cluster.kubeconfig}: grant its user "
                           "create, get, list, watch and delete on jobs and create, patch and delete on configmaps "
                           f"in namespace {cluster.namespace or 'default'} there, and mount the kubeconfig yourself")
        return
    needs.service_account_token = True
    needs.endpoints.append(IN_CLUSTER_API)
    needs.api_writes += [ApiWrite(w.group, w.resources, w.verbs, cluster.namespace, w.why) for w in SHARD_WRITES]
    if cluster.namespace or cluster.service_account != "dr-backup" or cluster.secret != "dr-credentials":
        needs.notes.append(f"shard pods run as service account {cluster.service_account!r} with Secret "
                           f"{cluster.secret!r} in namespace {cluster.namespace or 'of the backup'}: create them "
                           "there yourself where the rendered ones are not")
