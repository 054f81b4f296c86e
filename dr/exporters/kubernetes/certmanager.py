"""cert-manager, checked at backup time: issuers and the Secrets they read (refchecks.py).

  Certificate -> Issuer (same namespace) or ClusterIssuer (spec.issuerRef, group cert-manager.io;
                 external issuers are not checked)          never issued or renewed
                 (issuerRef.kind unset defaults to Issuer: when only a ClusterIssuer of that
                 name exists, the finding says to set the kind)
  Issuer / ClusterIssuer -> the Secrets it reads: Vault auth (token, AppRole, Kubernetes), the
                 Vault CA bundle, the CA key pair, Venafi credentials
                                                            it cannot sign: every Certificate
                                                            using it stops renewing
  ACME privateKeySecretRef                                  info: cert-manager registers a new
                                                            ACME account (and key) when it is gone
A ClusterIssuer's Secrets are in cert-manager's "cluster resource namespace" (cert-manager by
default, as wellknown.py records them). Where the issuer's servers (Vault, ACME, Venafi) live
is the audit's business: the scan records them as dependencies (wellknown.py).
"""

from __future__ import annotations

from typing import Iterator

from dr.exporters.kubernetes.refchecks import ReferenceCheck, Wanted, referrer, spec, text
from dr.exporters.kubernetes.wellknown import CERT_MANAGER_NAMESPACE, ISSUER_SECRETS

GROUP = "cert-manager.io"
_NOT_SIGNING = "the issuer cannot sign: Certificates that use it are not issued or renewed, in the source and " \
               "after a restore"


def _certificate(certificate: dict) -> Iterator[Wanted]:
    ref = spec(certificate).get("issuerRef") or {}
    name = text(ref.get("name"))
    if not name or ref.get("group", GROUP) not in (GROUP, ""):
        return
    kind = ref.get("kind") or "Issuer"
    namespace = (certificate.get("metadata") or {}).get("namespace", "")
    target = f"{namespace}/{name}" if kind == "Issuer" and namespace else name
    meant = "" if ref.get("kind") else f"ClusterIssuer/{name}"  # the usual slip: kind left to its default
    yield Wanted(referrer("Certificate", certificate), kind, target, "cert-manager-issuer-missing",
                 "cert-manager never issues or renews the certificate (its Secret expires)",
                 meant=meant, field="spec.issuerRef.kind")


def _issuer(kind: str):
    def read(issuer: dict) -> Iterator[Wanted]:
        body = spec(issuer)
        namespace = (issuer.get("metadata") or {}).get("namespace") or CERT_MANAGER_NAMESPACE
        for path, key in ISSUER_SECRETS:
            node = body
            for part in path:
                node = node.get(part) if isinstance(node.get(part), dict) else {}
            name = text(node.get(key))
            if not name:
                continue
            if path == ("acme", "privateKeySecretRef"):
                yield Wanted(referrer(kind, issuer), "Secret", f"{namespace}/{name}", "cert-manager-secret-missing",
                             "cert-manager registers a new ACME account with a new key (the old account's "
                             "rate limits and authorizations are not carried over)", severity="info")
            else:
                yield Wanted(referrer(kind, issuer), "Secret", f"{namespace}/{name}", "cert-manager-secret-missing",
                             _NOT_SIGNING)
    return read


def cert_manager_check() -> ReferenceCheck:
    tracked = {(GROUP, "issuers"): "Issuer", (GROUP, "clusterissuers"): "ClusterIssuer", ("", "secrets"): "Secret"}
    readers = {(GROUP, "certificates"): _certificate, (GROUP, "issuers"): _issuer("Issuer"),
               (GROUP, "clusterissuers"): _issuer("ClusterIssuer")}
    return ReferenceCheck(tracked, readers)
