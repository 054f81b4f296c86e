"""Fields whose meaning is known exactly, by API group and kind: the precise half of the scan.

The generic pass (references.py) would find these URLs too, but only as "http-endpoint": here
they get the kind a person acts on. Each entry says what the field is, and why that kind:
  argoproj.io        any `repoURL` (Application source(s), ApplicationSet templates and git
                     generators): git-remote, or helm-chart-repo when a `chart` sits beside it;
                     Application spec.destination.server: kubernetes-api (the cluster deployed to)
  source.toolkit.fluxcd.io
                     GitRepository spec.url: git-remote; HelmRepository spec.url: helm-chart-repo
                     (registry when type is oci); OCIRepository spec.url: registry; Bucket
                     spec.endpoint + spec.bucketName: bucket
  cert-manager.io    Issuer / ClusterIssuer spec.vault.server: secret-store (certificates are
                     signed by that Vault); spec.acme.server, spec.venafi.*.url:
                     certificate-authority; the Secrets the issuer reads (Vault auth, ACME
                     account key, CA key pair); Certificate spec.issuerRef: the issuer object
  external-secrets.io
                     SecretStore / ClusterSecretStore spec.provider: one secret-store per provider
                     block (its endpoint; for AWS the regional endpoint host of the service,
                     https://secretsmanager.<region>.amazonaws.com or ssm.<region> for
                     ParameterStore, so the placer puts it in that region's domain;
                     `<provider>:<service>:<region>` for other cloud ones);
                     ExternalSecret spec.secretStoreRef: the store object
  ServiceAccount     imagePullSecrets and secrets: the Secrets pods of that account use
  any object         the AWS load balancer annotations naming ACM certificates
                     (`alb.ingress.kubernetes.io/certificate-arn` on an Ingress,
                     `service.beta.kubernetes.io/aws-load-balancer-ssl-cert` on a Service):
                     acm-certificate, the ARN (the certificates exporter's dependency kind: an
                     ACM certificate lives in one region)
  Crossplane, ACK    managed AWS resources (*.aws.upbound.io, *.aws.crossplane.io,
                     *.services.k8s.aws): spec.forProvider.region, or ACK's
                     `services.k8s.aws/region` annotation: cloud-resource,
                     aws:<service>:<region> (the service from the API group), placed in the region
Object references are written the way artifacts declare what they provide (`secret:<ns>/<name>`),
so the audit can tell which ones the snapshot itself restores.
"""

from __future__ import annotations

from typing import Callable, Iterator

# cert-manager reads a ClusterIssuer's Secrets from its "cluster resource namespace".
CERT_MANAGER_NAMESPACE = "cert-manager"
# Keys of an external-secrets provider block that name the store's endpoint.
STORE_ENDPOINT_KEYS = ("server", "url", "vaultUrl", "endpoint", "host", "address")
# External Secrets' AWS services -> the endpoint host each one calls (SecretsManager is the default).
AWS_STORE_HOSTS = {"SecretsManager": "secretsmanager", "ParameterStore": "ssm"}

Found = tuple[str, str, tuple]  # (kind, reference, path inside the object)


def object_ref(kind: str, namespace: str, name: str) -> str:
    return f"{kind}:{namespace}/{name}" if namespace else f"{kind}:{name}"


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _repo_urls(node, parts: tuple) -> Iterator[tuple[tuple, dict]]:
    """Every dict holding a `repoURL`, wherever it nests (sources, templates, generators)."""
    if isinstance(node, dict):
        if "repoURL" in node:
            yield parts, node
        for key, value in node.items():
            if isinstance(value, (dict, list)):
                yield from _repo_urls(value, parts + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _repo_urls(value, parts + (index,))


def argo(obj: dict, namespace: str) -> Iterator[Found]:
    for parts, node in _repo_urls(obj.get("spec"), ("spec",)):
        url = _text(node.get("repoURL"))
        if url:
            yield ("helm-chart-repo" if node.get("chart") else "git-remote"), url, parts + ("repoURL",)
    server = _text(_dict(_dict(obj.get("spec")).get("destination")).get("server"))
    if obj.get("kind") == "Application" and server:
        yield "kubernetes-api", server, ("spec", "destination", "server")


_FLUX_URL_KINDS = {"GitRepository": "git-remote", "HelmRepository": "helm-chart-repo", "OCIRepository": "registry"}


def flux(obj: dict, namespace: str) -> Iterator[Found]:
    spec, kind = _dict(obj.get("spec")), obj.get("kind")
    url = _text(spec.get("url"))
    if kind in _FLUX_URL_KINDS and url:
        exact = "registry" if kind == "HelmRepository" and spec.get("type") == "oci" else _FLUX_URL_KINDS[kind]
        yield exact, url, ("spec", "url")
    if kind == "Bucket" and _text(spec.get("bucketName")):
        endpoint = _text(spec.get("endpoint")) or "s3.amazonaws.com"
        base = endpoint if "://" in endpoint else f"{'http' if spec.get('insecure') else 'https'}://{endpoint}"
        yield "bucket", f"{base.rstrip('/')}/{spec['bucketName']}", ("spec", "bucketName")
    secret = _text(_dict(spec.get("secretRef")).get("name"))
    if secret:
        yield "secret", object_ref("secret", namespace, secret), ("spec", "secretRef")


ISSUER_SECRETS = (  # (path to a dict, key holding the Secret's name)
    (("vault", "auth", "tokenSecretRef"), "name"), (("vault", "auth", "appRole", "secretRef"), "name"),
    (("vault", "auth", "kubernetes", "secretRef"), "name"), (("vault", "caBundleSecretRef"), "name"),
    (("acme", "privateKeySecretRef"), "name"), (("ca",), "secretName"),
    (("venafi", "tpp", "credentialsRef"), "name"), (("venafi", "cloud", "apiTokenSecretRef"), "name"),
)


def cert_manager(obj: dict, namespace: str) -> Iterator[Found]:
    spec, kind = _dict(obj.get("spec")), obj.get("kind")
    if kind == "Certificate":
        ref = _dict(spec.get("issuerRef"))
        if _text(ref.get("name")) and ref.get("group", "cert-manager.io") == "cert-manager.io":
            issuer = str(ref.get("kind") or "Issuer").lower()
            yield "issuer", object_ref(issuer, namespace if issuer == "issuer" else "", ref["name"]), \
                ("spec", "issuerRef")
        return
    if kind not in ("Issuer", "ClusterIssuer"):
        return
    server = _text(_dict(spec.get("vault")).get("server"))
    if server:
        yield "secret-store", server, ("spec", "vault", "server")
    acme = _text(_dict(spec.get("acme")).get("server"))
    if acme:
        yield "certificate-authority", acme, ("spec", "acme", "server")
    for flavour in ("tpp", "cloud"):
        url = _text(_dict(_dict(spec.get("venafi")).get(flavour)).get("url"))
        if url:
            yield "certificate-authority", url, ("spec", "venafi", flavour, "url")
    secrets_in = namespace or CERT_MANAGER_NAMESPACE
    for path, key in ISSUER_SECRETS:
        node = spec
        for part in path:
            node = _dict(node.get(part))
        name = _text(node.get(key))
        if name:
            yield "secret", object_ref("secret", secrets_in, name), ("spec",) + path + (key,)


def external_secrets(obj: dict, namespace: str) -> Iterator[Found]:
    spec = _dict(obj.get("spec"))
    for provider, config in _dict(spec.get("provider")).items():
        if not isinstance(config, dict):
            continue
        key = next((k for k in STORE_ENDPOINT_KEYS if _text(config.get(k))), None)
        if key is not None:
            yield "secret-store", config[key], ("spec", "provider", provider, key)
            continue
        region = config.get("region") or config.get("location") or config.get("projectID") or ""
        if provider == "aws" and _text(region):
            service = AWS_STORE_HOSTS.get(str(config.get("service") or "SecretsManager"), "secretsmanager")
            yield "secret-store", f"https://{service}.{region}.amazonaws.com", ("spec", "provider", provider)
            continue
        endpoint = ":".join(p for p in (provider, str(config.get("service", "")), str(region)) if p)
        yield "secret-store", endpoint, ("spec", "provider", provider)
    ref = _dict(spec.get("secretStoreRef"))
    if _text(ref.get("name")):
        kind = str(ref.get("kind") or "SecretStore").lower()
        yield "secret-store", object_ref(kind, namespace if kind == "secretstore" else "", ref["name"]), \
            ("spec", "secretStoreRef")


def service_account(obj: dict, namespace: str) -> Iterator[Found]:
    for field in ("imagePullSecrets", "secrets"):
        for index, ref in enumerate(obj.get(field) or []):
            name = _text(_dict(ref).get("name"))
            if name:
                yield "secret", object_ref("secret", namespace, name), (field, index)


# API group -> the fields it knows; "" is the core group (matched by kind).
BY_GROUP: dict[str, Callable[[dict, str], Iterator[Found]]] = {
    "argoproj.io": argo,
    "source.toolkit.fluxcd.io": flux,
    "cert-manager.io": cert_manager,
    "external-secrets.io": external_secrets,
}
BY_CORE_KIND: dict[str, Callable[[dict, str], Iterator[Found]]] = {"ServiceAccount": service_account}


# Annotations whose value is a comma-separated list of ACM certificate ARNs.
CERTIFICATE_ANNOTATIONS = ("alb.ingress.kubernetes.io/certificate-arn",
                           "service.beta.kubernetes.io/aws-load-balancer-ssl-cert")


def certificate_annotations(obj: dict) -> Iterator[Found]:
    annotations = _dict(_dict(obj.get("metadata")).get("annotations"))
    for key in CERTIFICATE_ANNOTATIONS:
        for arn in (_text(annotations.get(key)) or "").split(","):
            if arn.strip().startswith("arn:") and ":acm:" in arn:
                yield "acm-certificate", arn.strip(), ("metadata", "annotations", key)


# API groups of managed AWS resources (Crossplane's providers, ACK); their first label is the service.
AWS_MANAGED_GROUPS = (".aws.upbound.io", ".aws.crossplane.io", ".services.k8s.aws")
ACK_REGION = "services.k8s.aws/region"


def aws_managed(obj: dict, group: str) -> Iterator[Found]:
    region = _text(_dict(_dict(obj.get("spec")).get("forProvider")).get("region"))
    at: tuple = ("spec", "forProvider", "region")
    if region is None:
        region = _text(_dict(_dict(obj.get("metadata")).get("annotations")).get(ACK_REGION))
        at = ("metadata", "annotations", ACK_REGION)
    if region:
        yield "cloud-resource", f"aws:{group.split('.', 1)[0]}:{region}", at


def known_fields(obj: dict, namespace: str) -> Iterator[Found]:
    yield from certificate_annotations(obj)
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.split("/", 1)[0] if "/" in api_version else ""
    if group.endswith(AWS_MANAGED_GROUPS):
        yield from aws_managed(obj, group)
    if group:
        reader = BY_GROUP.get(group)
    else:
        reader = BY_CORE_KIND.get(str(obj.get("kind", "")))
    if reader is not None:
        yield from reader(obj, namespace)
