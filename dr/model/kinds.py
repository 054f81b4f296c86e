"""Dependency kinds that several producers write: the shared vocabulary of references.

An exporter's own kinds (`unseal-kms`, `secretsmanager-secret`, `acm-certificate`, ...) are its
to declare (Exporter.lost_kind_codes, origin_kinds, checked_kinds), and the core never names
them (tests/test_core_knows_no_exporter.py). These are the kinds the core may name, because
more than one producer writes them and no exporter owns them: container images and their
registries (pod specs read by the kubernetes exporter, the images exporter, dr's own image in
the deploy renderer), charts and chart repositories (Helm releases in the cluster, the helm
exporter), secret stores and KMS keys (External Secrets objects, SOPS files, Vault), and where
data lives (a checkpoint's or a model's bucket or path).
"""

from __future__ import annotations

IMAGE_KINDS = frozenset({"image", "registry", "oci-registry"})
CHART_KINDS = frozenset({"helm-repo", "helm-chart-repo", "helm-chart", "chart-repo", "chart"})
SECRET_KINDS = frozenset({"secret-store", "kms"})
DATA_KINDS = frozenset({"bucket", "path", "model-registry"})
SHARED = IMAGE_KINDS | CHART_KINDS | SECRET_KINDS | DATA_KINDS
