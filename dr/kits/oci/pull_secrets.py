"""Registry credentials from Kubernetes pull secrets, for the kit's resolver
(dr.kits.oci.credentials, whose `pull_secrets` they feed): `.dockerconfigjson` is a docker
config, the legacy `.dockercfg` its `auths` alone. Read through dr.kits.kubeconfigs (kubectl's
rules, else in-cluster)."""

from __future__ import annotations

import base64
import json

from dr.kits.kubeconfigs import KubeconfigError, load_into, resolve


def read_pull_secrets(names: list[str], kubeconfig: str | None, context: str | None) -> list[dict]:
    """The docker configs held by Kubernetes pull secrets `namespace/name`."""
    if not names:
        return []
    import kubernetes  # dr depends on it; imported only when a plan names pull secrets

    configuration = kubernetes.client.Configuration()
    try:
        load_into(configuration, resolve(kubeconfig, context))  # kubectl's rules, else in-cluster
    except KubeconfigError as exc:
        raise ValueError(f"pull secrets: {exc}") from None
    api = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(configuration))
    configs = []
    for name in names:
        namespace, _, secret = name.partition("/")
        try:
            data = api.read_namespaced_secret(secret, namespace).data or {}
        except kubernetes.client.ApiException as exc:
            raise ValueError(f"pull secret {name}: HTTP {exc.status} {exc.reason}") from None
        if ".dockerconfigjson" in data:
            configs.append(json.loads(base64.b64decode(data[".dockerconfigjson"])))
        elif ".dockercfg" in data:
            configs.append({"auths": json.loads(base64.b64decode(data[".dockercfg"]))})
        else:
            raise ValueError(f"pull secret {name} holds neither .dockerconfigjson nor .dockercfg")
    return configs
