"""Restore order from references between objects: which object must exist before the one naming it.

Two sources, both read by ordering.levels() as "reference" edges between resource types:
  REFERENCES   the well-known references, one entry each (before, after, field, why): the type
               named, the type naming it, the field that names it, and what goes wrong when
               the named object is missing at create time. A built-in rule applies whenever
               the backup holds both types (the field is documentation: the rule holds for
               old snapshots too, whose scan did not record the reference).
  derived()    every other reference the backup scan recorded (an artifact's dependencies,
               dr.exporters.kubernetes.scanning) that another artifact of this restore provides
               (`secret:<ns>/<name>`, `storageclass:<name>`, a Service's DNS name): the
               provider's type is restored first. Only references between two restored
               objects count; one example is kept as the reason.
A reference edge outranks the generic "configuration before workloads" hint (a TrainJob has no
pod template, its runtime has one); two reference edges in a cycle are set aside with a warning
naming them (ordering.py), and an admission webhook's refusal is then retried (restoring.py).
"""

from __future__ import annotations

from typing import Iterable

from dr.exporters.kubernetes.resources import ResourceType
from dr.model.artifacts import Artifact

TR, ES, ARGO, KS, RAY = ("trainer.kubeflow.org", "external-secrets.io", "argoproj.io", "serving.kserve.io",
                         "ray.io")
_TRAINER = "Kubeflow Trainer's validating webhook refuses a TrainJob whose runtime does not exist"
_STORE = ("External Secrets marks the object SecretSyncedError and never fetches while its store is "
          "missing; restored first, the first sync succeeds")
_PROJECT = "Argo CD refuses an Application whose AppProject does not exist (InvalidSpecError, never synced)"
_RUNTIME = "KServe's webhook refuses an InferenceService whose runtime does not exist"

REFERENCES: list[tuple[str, str, str, str]] = [
    # (before: the type named, after: the type naming it, the field, why)
    (f"clustertrainingruntimes.{TR}", f"trainjobs.{TR}", "spec.runtimeRef (kind ClusterTrainingRuntime)", _TRAINER),
    (f"trainingruntimes.{TR}", f"trainjobs.{TR}", "spec.runtimeRef (kind TrainingRuntime)", _TRAINER),
    (f"secretstores.{ES}", f"externalsecrets.{ES}", "spec.secretStoreRef", _STORE),
    (f"clustersecretstores.{ES}", f"externalsecrets.{ES}", "spec.secretStoreRef (kind ClusterSecretStore)", _STORE),
    (f"clustersecretstores.{ES}", f"clusterexternalsecrets.{ES}", "spec.externalSecretSpec.secretStoreRef", _STORE),
    (f"secretstores.{ES}", f"pushsecrets.{ES}", "spec.secretStoreRefs", _STORE),
    (f"clustersecretstores.{ES}", f"pushsecrets.{ES}", "spec.secretStoreRefs", _STORE),
    (f"appprojects.{ARGO}", f"applications.{ARGO}", "spec.project", _PROJECT),
    (f"appprojects.{ARGO}", f"applicationsets.{ARGO}", "spec.template.spec.project", _PROJECT),
    (f"servingruntimes.{KS}", f"inferenceservices.{KS}", "spec.predictor.model.runtime", _RUNTIME),
    (f"clusterservingruntimes.{KS}", f"inferenceservices.{KS}", "spec.predictor.model.runtime", _RUNTIME),
    ("serviceaccounts", f"inferenceservices.{KS}", "spec.predictor.serviceAccountName",
     "KServe creates the predictor's pods at once, and a pod naming a missing ServiceAccount is rejected"),
    (f"rayclusters.{RAY}", f"rayjobs.{RAY}", "spec.clusterSelector",
     "a RayJob with a clusterSelector submits to the RayCluster it selects; KubeRay fails it when none exists"),
    ("persistentvolumeclaims", "@workloads", "volumes[].persistentVolumeClaim.claimName",
     "a pod whose claim is missing stays Pending, and an operator may create an empty volume in its place"),
]

# Recorded references that do not order a create: a webhook's Service is called only once the
# webhook configuration exists, and a CRD's conversion webhook only when objects are converted.
NOT_ORDERING = frozenset({"webhook-service"})


def derived(artifacts: Iterable[Artifact]) -> dict[str, dict[str, str]]:
    """after -> {before: why}: the provider's type before the type whose objects name it."""
    typed = [(ResourceType.from_meta(a.meta).qualified, a) for a in artifacts]
    provider: dict[str, str] = {}
    for qualified, artifact in typed:
        provider.update(dict.fromkeys(artifact.meta.get("provides") or (), qualified))
    found: dict[str, dict[str, str]] = {}
    for qualified, artifact in typed:
        for dependency in artifact.dependencies:
            before = provider.get(dependency.reference)
            if before and before != qualified and dependency.kind not in NOT_ORDERING:
                found.setdefault(qualified, {}).setdefault(
                    before, f"{dependency.detail or qualified} names {dependency.reference}")
    return found
