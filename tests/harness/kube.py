"""An emulated Kubernetes API server for tests: kmock's emulator, hardened to follow the REST rules.

No real kube-apiserver can be installed on the test machines (see the shared TEST-INFRA.md), so
the suite talks to an in-memory emulation over real HTTP on 127.0.0.1, through the official
``kubernetes`` client, exactly as the product does against a real cluster.

How it is built
---------------
``EmulatedCluster`` runs a ``kmock.Server`` (aiohttp) in a background thread with its own asyncio
loop. The handler is ``KubeApiEmulator``, a subclass of ``kmock.KubernetesEmulator``. kmock 0.8's
stock emulator cannot be bent far enough: its path parser crashes on ``/api/v1/namespaces``, it
keeps objects as merged dicts with no metadata, and has no paging, conflicts or CRD serving. So the
subclass keeps kmock's server, its request log and filters (``list(cluster.emulator['list'])``,
``cluster.emulator['get /api/v1/namespaces']``) and *user reactions* (``cluster.emulator['get
/api/v1/pods'] << 418`` overrides the emulation for matching requests), and
replaces the storage and REST semantics with its own small in-memory store, written to the
Kubernetes API conventions. Several clusters can run in one process (e.g. source and destination):
kmock's global aiohttp DNS interceptor, which is not thread-safe, is switched off for them.

What is emulated (as a real API server does it)
-----------------------------------------------
* Paths: ``/api``, ``/apis``, ``/apis/<g>``, ``/api/v1``, ``/apis/<g>/<v>`` (discovery),
  ``/version``, ``/healthz``; namespaced and cluster-scoped collections and objects, cross-
  namespace lists, ``/api/v1/namespaces[/<name>[/status|/finalize]]``, ``/status`` and ``/scale``
  subresources; trailing slashes tolerated.
* Verbs: get, list, watch, create (201), update (PUT), patch (JSON patch, merge patch,
  strategic merge patch on built-ins, server-side apply), delete, deletecollection; ``dryRun``.
* Metadata: uid, creationTimestamp, generation (bumped when anything but metadata/status
  changes), resourceVersion from one per-cluster counter that grows on every write (a no-op update
  does not write, as on a real server), managedFields, generateName.
* Errors as ``kind: Status`` bodies with reason/code/details: 404 NotFound (missing object,
  unknown resource, create in a missing namespace), 409 AlreadyExists, 409 Conflict (stale
  resourceVersion on PUT/PATCH, failed delete preconditions), 400 BadRequest (name/namespace
  mismatch, bad selectors, bad continue token, bad base64), 405, 415 (strategic merge patch on a
  custom resource), 422 Invalid, 500 when a create carries a resourceVersion.
* Lists: ``kind: <Kind>List``, list resourceVersion, stable order (namespace, name), ``limit`` and
  opaque ``continue`` tokens, ``remainingItemCount``, ``labelSelector`` (=, ==, !=, in, notin,
  exists, !exists), ``fieldSelector`` (=, ==, !=). Items of *built-in* lists carry no
  kind/apiVersion (a real server omits them too; custom resource list items have them).
* Watch: ADDED/MODIFIED/DELETED events, from a resourceVersion (410 Expired when too old) or
  starting with the current state, selectors, ``timeoutSeconds``.
* Request bodies up to 3 MiB, as kube-apiserver's limit; a larger one answers 413
  RequestEntityTooLarge (a ``Status``), whatever its verb.
* Secrets: ``stringData`` folded into base64 ``data``, ``type`` defaults to Opaque.
* Namespaces: default, kube-system, kube-public, kube-node-lease exist (the first three cannot be
  deleted: 403); ``kubernetes.io/metadata.name`` label, phase Active, deletion cascades to the
  contents (after ``namespace_deletion_delay``; creates in a Terminating namespace answer 403);
  every namespace gets the ``default`` ServiceAccount and ``kube-root-ca.crt`` ConfigMap as the
  controllers of a real cluster add them (``namespace_defaults=False`` to turn off).
* Finalizers: delete sets deletionTimestamp and keeps the object until its finalizers are gone.
* CRDs: names checked (metadata.name == plural.group, one storage version); after
  ``crd_establish_delay`` seconds (never in the create response itself) the CRD gets
  NamesAccepted=True and Established=True, and its resources are served in every served version,
  namespaced or cluster-scoped, with discovery showing them. Custom resources are pruned of
  fields unknown to the version's structural schema and get its defaults. Deleting a CRD deletes
  its custom resources and stops serving them.
* The pod proxy, ``/api/v1/namespaces/<ns>/pods/[http:|https:]<name>[:<port>]/proxy[/<path>]``
  (any method): the request's path, query, body and headers (not hop-by-hop ones nor the client's
  Authorization) are forwarded to where ``serve_pod_port`` says the pod's port is (a pod here has
  no IP of its own; ``tests.harness.jobs.JobRunner`` registers its pods), both bodies streamed,
  with no body size limit (as kube-apiserver's proxy). A missing pod answers 404; a pod that is
  not Running, has no IP or no such port registered, or a refused connection answer 503. Logged as
  verb get/create/update/patch/delete on resource ``pods``, subresource ``proxy``, name as in the
  path (``pod:8080``, as RBAC sees it); faults apply, kmock DSL reactions do not.
* Exec, ``/api/v1/namespaces/<ns>/pods/<name>/exec?command=...&container=...`` over a websocket
  (``v4.channel.k8s.io``: stdout on channel 1, stderr on 2, the exit status on 3): the command is
  handed to what ``serve_pod_exec`` registered for the pod (a stand-in for the container runtime,
  e.g. ``JobRunner.serve_exec``, which runs it as a local process). A missing pod answers 404, a
  pod that is not Running or has no such container 400, one with nothing registered 500. Logged
  as verb create on resource ``pods``, subresource ``exec`` (what RBAC checks); faults apply.
* Fault injection (``fail_next``, ``throttle_next``, ``hang_next``) and a request log with
  counters (``count``, ``counts``).

What a real API server does differently (not emulated)
------------------------------------------------------
* No authentication, authorization (RBAC is stored, not enforced) or webhooks; admission only
  through stand-ins a test adds (``add_admission_webhook``: a Python check run on every create,
  its refusal answered in kube-apiserver's words, ``admission webhook "<name>" denied the request``).
* No etcd behind the store: a real cluster's etcd refuses a value over its ``--max-request-bytes``
  (1.5 MiB by default) with "etcdserver: request is too large", even under the 3 MiB body limit.
* ValidatingAdmissionPolicies and their bindings are stored and served, never evaluated.
* No schema validation: invalid objects are accepted (custom resources are only pruned and
  defaulted); built-in types get no defaulting beyond the few listed above.
* No controllers: Deployments create no Pods, Jobs never run, PVCs stay Pending, no garbage
  collection through ownerReferences, no ServiceAccount tokens, no Service IP allocation.
* Strategic merge patch is approximated: maps merge, lists of objects that all carry ``name``
  merge by name, other lists are replaced; ``$patch`` directives other than delete are ignored.
  Server-side apply is a create-or-merge-patch: no field ownership conflicts, no removal of
  fields a manager stopped applying. managedFields are simplified (one entry per manager and
  operation; lists are leaves).
* ``continue`` pages are served from the current state, not a snapshot at the list's
  resourceVersion; tokens never expire (inject a 410 with ``fail_next`` to test that path).
  The ``resourceVersion``/``resourceVersionMatch`` parameters of a list are ignored.
* Field selectors accept any dotted path (a real server supports a few per kind, others 400).
* Custom resource versions are not converted: objects are served in any served version with
  only ``apiVersion`` rewritten (the "None" conversion strategy); per-version subresources are
  merged across versions. No ``/openapi``, no aggregated discovery, no Table output, no protobuf.
* DELETE answers the object for pods, services, namespaces, CRDs and pending (finalizer)
  deletions, a ``Status`` otherwise; deletecollection answers a ``Status``.
* ``/version`` reports ``kubernetes_version`` (default 1.31.0) with a fake commit.
* The official Python client retries GETs by itself (urllib3's default Retry: 429/503 with a
  Retry-After, read timeouts), so a fault on a GET is only seen when it outlasts those retries
  or the client is built with ``configuration.retries = False``.
* kubectl works for get/create/delete/wait and ``apply --server-side``, but its client-side
  validation needs ``/openapi`` (not served): pass ``--validate=false``.

Usage::

    with EmulatedCluster(name="source") as src, EmulatedCluster(name="dest") as dst:
        core = kubernetes.client.CoreV1Api(src.api_client())
        core.create_namespace({"metadata": {"name": "team-a"}})
        src.throttle_next("/api/v1/namespaces", times=2, retry_after=1)
        assert src.count(verb="create", resource="namespaces") == 1
        path = dst.kubeconfig_path(tmp_path, "dest")
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import collections
import copy
import dataclasses
import datetime
import fnmatch
import json
import os
import random
import re
import shutil
import tempfile
import threading
import time
import traceback
import urllib.parse
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import aiohttp.web
import attrs
import jsonpatch
import kmock
import yaml
from kmock._internal import rendering

__all__ = [
    "EmulatedCluster",
    "Fault",
    "KubeApiEmulator",
    "RequestRecord",
    "ResourceType",
    "write_kubeconfig",
]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = ("get", "patch", "update")

# group, version, plural, kind, namespaced, subresources, short names, categories
_BUILTINS: list[tuple[str, str, str, str, bool, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = [
    ("", "v1", "namespaces", "Namespace", False, ("status", "finalize"), ("ns",), ()),
    ("", "v1", "configmaps", "ConfigMap", True, (), ("cm",), ()),
    ("", "v1", "secrets", "Secret", True, (), (), ()),
    ("", "v1", "serviceaccounts", "ServiceAccount", True, (), ("sa",), ()),
    ("", "v1", "services", "Service", True, ("status",), ("svc",), ("all",)),
    ("", "v1", "pods", "Pod", True, ("status",), ("po",), ("all",)),
    ("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("status",), ("pvc",), ()),
    ("", "v1", "persistentvolumes", "PersistentVolume", False, ("status",), ("pv",), ()),
    ("", "v1", "nodes", "Node", False, ("status",), ("no",), ()),
    ("", "v1", "events", "Event", True, (), ("ev",), ()),
    ("", "v1", "endpoints", "Endpoints", True, (), ("ep",), ()),
    ("", "v1", "resourcequotas", "ResourceQuota", True, ("status",), ("quota",), ()),
    ("", "v1", "limitranges", "LimitRange", True, (), ("limits",), ()),
    ("apps", "v1", "deployments", "Deployment", True, ("status", "scale"), ("deploy",), ("all",)),
    ("apps", "v1", "statefulsets", "StatefulSet", True, ("status", "scale"), ("sts",), ("all",)),
    ("apps", "v1", "daemonsets", "DaemonSet", True, ("status",), ("ds",), ("all",)),
    ("apps", "v1", "replicasets", "ReplicaSet", True, ("status", "scale"), ("rs",), ("all",)),
    ("batch", "v1", "jobs", "Job", True, ("status",), (), ("all",)),
    ("batch", "v1", "cronjobs", "CronJob", True, ("status",), ("cj",), ("all",)),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role", True, (), (), ()),
    ("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True, (), (), ()),
    ("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, (), (), ()),
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False, (), (), ()),
    ("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, (), ("pc",), ()),
    ("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, (), ("sc",), ()),
    ("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False, (), (), ()),
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
     ("status",), ("crd", "crds"), ()),
    ("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
     "ValidatingWebhookConfiguration", False, (), (), ()),
    ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
     "MutatingWebhookConfiguration", False, (), (), ()),
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
     "ValidatingAdmissionPolicy", False, ("status",), (), ()),
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
     "ValidatingAdmissionPolicyBinding", False, (), (), ()),
    ("networking.k8s.io", "v1", "ingresses", "Ingress", True, ("status",), ("ing",), ()),
    ("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False, (), (), ()),
    ("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, (), ("netpol",), ()),
    ("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("status",), ("pdb",), ()),
    ("coordination.k8s.io", "v1", "leases", "Lease", True, (), (), ()),
]

# Resources whose DELETE answers the deleted object rather than a Status (ReturnDeletedObject).
_RETURN_DELETED = {("", "pods"), ("", "services"), ("", "namespaces"),
                   ("apiextensions.k8s.io", "customresourcedefinitions")}

# kube-apiserver's MaxRequestBodyBytes (k8s.io/apiserver server.Config): a larger body is refused
# with 413 before it is decoded. aiohttp's own default (1 MiB) would refuse the big upstream CRDs.
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: a 3 MiB body in 1 s, not 60

# The API server's pod proxy: /api/v1/namespaces/<ns>/pods/[<scheme>:]<name>[:<port>]/proxy[/<path>]
_POD_PROXY = re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/proxy(/.*)?")
_POD_EXEC = re.compile(r"/api/v1/namespaces/([^/]+)/pods/([^/]+)/exec")
# Not forwarded (RFC 7230 hop-by-hop, and what kube-apiserver's proxy drops: the client's
# credentials, which its authentication filter removes once the request is authenticated).
_HOP_HEADERS = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
                "trailers", "transfer-encoding", "upgrade", "host", "authorization"}
_PROXY_VERBS = {"GET": "get", "HEAD": "get", "OPTIONS": "get", "POST": "create", "PUT": "update",
                "PATCH": "patch", "DELETE": "delete"}

CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
NS_KEY = ("", "namespaces")
CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"

_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
    405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Expired",
    413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 422: "Invalid",
    429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}
_MESSAGES = {
    410: "The provided continue parameter is too old to display a consistent list result. "
         "You can start a new list without the continue parameter.",
    429: "Too many requests, please try again later.",
    500: "Internal error occurred: injected failure",
    503: "The server is currently unable to handle the request",
    504: "The server was unable to return a response in the time allotted, "
         "but may still be processing the request",
}

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_FAKE_CA = ("-----BEGIN CERTIFICATE-----\nTUlJQ2VtdWxhdGVkLWt1YmUtcm9vdC1jYS1ub3QtYS1yZWFsLWNlcnRpZmljYXRl\n"
            "-----END CERTIFICATE-----\n")


# --------------------------------------------------------------------------------------------
# Small value types
# --------------------------------------------------------------------------------------------

class ApiError(Exception):
    """A failure answered as a Kubernetes ``Status`` body."""

    def __init__(self, code: int, message: str, reason: str | None = None,
                 details: Mapping[str, Any] | None = None, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or _REASONS.get(code, "Unknown")
        self.details = dict(details or {})
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Failure", "message": self.message,
                                "reason": self.reason, "code": self.code}
        if self.details:
            body["details"] = self.details
        return body


@dataclasses.dataclass(eq=False)
class ResourceType:
    """One served resource (a plural in a group) and what discovery says about it."""

    group: str
    plural: str
    kind: str
    namespaced: bool
    versions: list[str]
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    custom: bool = False
    list_kind: str = ""
    schemas: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        self.singular = self.singular or self.kind.lower()
        self.list_kind = self.list_kind or f"{self.kind}List"

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    def details(self, name: str, **extra: Any) -> dict[str, Any]:
        details: dict[str, Any] = {"name": name}
        if self.group:
            details["group"] = self.group
        details["kind"] = self.plural
        details.update(extra)
        return details


@dataclasses.dataclass
class RequestRecord:
    """One request as the emulator saw it (for counters and assertions)."""

    method: str
    path: str
    query: dict[str, str]
    verb: str
    group: str | None = None
    version: str | None = None
    resource: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    status: int | None = None
    fault: bool = False
    time: float = dataclasses.field(default_factory=time.monotonic)
    authorization: str | None = None  # the credential the client sent (tests of token renewal)
    size: int = 0  # bytes of the request body


@dataclasses.dataclass(eq=False)
class Fault:
    """An injected failure for the next ``times`` requests matching path/method/verb."""

    path: str | re.Pattern[str] | None
    status: int | None = None
    delay: float = 0.0
    times: int | None = 1
    retry_after: int | None = None
    method: str | None = None
    verb: str | None = None
    message: str | None = None
    hits: int = 0

    @property
    def remaining(self) -> int | None:
        return None if self.times is None else max(0, self.times - self.hits)

    def matches(self, path: str, method: str, verb: str) -> bool:
        if self.remaining == 0:
            return False
        if self.method and self.method.upper() != method.upper():
            return False
        if self.verb and self.verb != verb:
            return False
        if self.path is None:
            return True
        if isinstance(self.path, re.Pattern):
            return self.path.search(path) is not None
        pattern = self.path.rstrip("/") or "/"
        return fnmatch.fnmatchcase(path, pattern) if "*" in pattern else path == pattern


@dataclasses.dataclass
class _Route:
    method: str
    path: str
    segments: list[str]
    verb: str
    discovery: bool = True
    group: str | None = None
    version: str | None = None
    plural: str | None = None
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None

    @classmethod
    def parse(cls, method: str, raw_path: str, query: Mapping[str, str]) -> "_Route":
        path = "/" + "/".join(s for s in raw_path.split("/") if s)
        segments = [s for s in path.split("/") if s]
        route = cls(method=method.upper(), path=path, segments=segments, verb=method.lower())
        if segments[:1] == ["api"] and len(segments) >= 3:
            route.group, route.version, rest = "", segments[1], segments[2:]
        elif segments[:1] == ["apis"] and len(segments) >= 4:
            route.group, route.version, rest = segments[1], segments[2], segments[3:]
        else:
            return route
        route.discovery = False
        is_ns_sub = route.group == "" and len(rest) == 3 and rest[2] in ("status", "finalize")
        if len(rest) >= 3 and rest[0] == "namespaces" and not is_ns_sub:
            route.namespace, rest = rest[1], rest[2:]
        route.plural = rest[0]
        route.name = rest[1] if len(rest) > 1 else None
        route.subresource = "/".join(rest[2:]) or None
        watching = query.get("watch") in ("1", "true", "True")
        route.verb = {
            "GET": "watch" if watching else ("get" if route.name else "list"),
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete" if route.name else "deletecollection",
        }.get(route.method, route.method.lower())
        return route


# --------------------------------------------------------------------------------------------
# Pure helpers: time, names, selectors, patches, schemas
# --------------------------------------------------------------------------------------------

def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _version_priority(version: str) -> tuple[Any, ...]:
    """Kubernetes' version ordering: GA > beta > alpha, then by numbers (highest first)."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (0, 0, 0, 0, version)
    rank = {None: 3, "beta": 2, "alpha": 1}[m.group(2)]
    return (1, rank, int(m.group(1)), int(m.group(3) or 0), "")


def _split_selector(selector: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for char in selector:
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        current += char
    terms.append(current)
    return [t.strip() for t in terms if t.strip()]


def parse_label_selector(selector: str) -> Callable[[Mapping[str, str]], bool]:
    """A predicate over a labels dict; raises ApiError(400) on a malformed selector."""
    checks: list[Callable[[Mapping[str, str]], bool]] = []
    key_re = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
    for term in _split_selector(selector or ""):
        if m := re.fullmatch(rf"({key_re})\s+(in|notin)\s+\(([^)]*)\)", term):
            key, op = m.group(1), m.group(2)
            values = {v.strip() for v in m.group(3).split(",") if v.strip()}
            if op == "in":
                checks.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                checks.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif m := re.fullmatch(rf"({key_re})\s*(!=|==|=)\s*([-A-Za-z0-9_.]*)", term):
            key, op, value = m.groups()
            if op == "!=":
                checks.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                checks.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif m := re.fullmatch(rf"!\s*({key_re})", term):
            checks.append(lambda labels, k=m.group(1): k not in labels)
        elif re.fullmatch(key_re, term):
            checks.append(lambda labels, k=term: k in labels)
        else:
            raise ApiError(400, f"unable to parse requirement: {term!r}")
    return lambda labels: all(check(labels) for check in checks)


def parse_field_selector(selector: str) -> Callable[[Mapping[str, Any]], bool]:
    checks: list[Callable[[Mapping[str, Any]], bool]] = []
    for term in _split_selector(selector or ""):
        m = re.fullmatch(r"([A-Za-z0-9_.]+)\s*(!=|==|=)\s*(.*)", term)
        if not m:
            raise ApiError(400, f"invalid field selector: {term!r}")
        path, op, value = m.groups()

        def lookup(obj: Mapping[str, Any], path: str = path) -> str:
            value: Any = obj
            for part in path.split("."):
                value = value.get(part) if isinstance(value, Mapping) else None
            return "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)

        if op == "!=":
            checks.append(lambda obj, f=lookup, v=value: f(obj) != v)
        else:
            checks.append(lambda obj, f=lookup, v=value: f(obj) == v)
    return lambda obj: all(check(obj) for check in checks)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _named_list(items: Any) -> bool:
    return isinstance(items, list) and all(isinstance(i, dict) and "name" in i for i in items)


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """An approximation of strategic merge patch (see the module docstring)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and _named_list(value) and _named_list(result.get(key)) and value:
            merged = {item["name"]: item for item in result[key]}
            for item in value:
                if item.get("$patch") == "delete":
                    merged.pop(item["name"], None)
                else:
                    merged[item["name"]] = strategic_merge_patch(merged.get(item["name"]), item)
            result[key] = list(merged.values())
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    return result


def prune(value: Any, schema: Any) -> Any:
    """Drop the fields a structural schema does not know (as the server does for custom resources)."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        embedded = schema.get("x-kubernetes-embedded-resource")
        result = {}
        for key, item in value.items():
            if key in props:
                result[key] = prune(item, props[key])
            elif isinstance(additional, dict):
                result[key] = prune(item, additional)
            elif additional is True or preserve or (embedded and key in ("apiVersion", "kind", "metadata")):
                result[key] = item
        return result
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune(item, schema["items"]) for item in value]
    return value


def apply_defaults(value: Any, schema: Any) -> Any:
    """Fill ``default`` values of a structural schema into a (fresh) object, recursively."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if key not in value and isinstance(sub, dict) and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        additional = schema.get("additionalProperties")
        for key in list(value):
            sub = props.get(key, additional if isinstance(additional, dict) else None)
            if sub is not None:
                value[key] = apply_defaults(value[key], sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(item, schema["items"]) for item in value]
    return value


def _fields_v1(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {f"f:{key}": _fields_v1(item) for key, item in value.items()}
    return {}


def _spec_of(obj: Mapping[str, Any], with_status: bool) -> dict[str, Any]:
    """Everything generation tracks: all but metadata (and status when it is a subresource)."""
    skip = {"metadata", "status"} if with_status else {"metadata"}
    return {k: v for k, v in obj.items() if k not in skip}


def _encode_continue(key: tuple[str, str], rv: int) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{key[0]}/{key[1]}\x00"})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[tuple[str, str], int]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        namespace, name = data["start"].rstrip("\x00").split("/", 1)
        return (namespace, name), int(data["rv"])
    except Exception as exc:  # any garbage is a client error
        raise ApiError(400, f"continue key is not valid: {exc}") from None


# --------------------------------------------------------------------------------------------
# The emulator: a kmock handler with our own store and REST semantics
# --------------------------------------------------------------------------------------------

class _Watcher:
    def __init__(self, key: tuple[str, str], namespace: str | None):
        self.key = key
        self.namespace = namespace
        self.queue: asyncio.Queue[tuple[int, str, dict[str, Any], dict[str, Any] | None] | None] = asyncio.Queue()


@attrs.define(kw_only=True, slots=False)
class KubeApiEmulator(kmock.KubernetesEmulator):
    """kmock's Kubernetes emulator with an in-memory store that follows the API conventions."""

    crd_establish_delay: float = 0.0
    namespace_deletion_delay: float = 0.0
    namespace_defaults: bool = True
    kubernetes_version: str = "1.31.0"
    event_log_size: int = 100_000

    def __attrs_post_init__(self) -> None:
        # Deliberately not calling kmock's: its fallback reactions are replaced by _dispatch().
        self.types: dict[tuple[str, str], ResourceType] = {}
        self.store: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = collections.defaultdict(dict)
        self.log: list[RequestRecord] = []
        self.faults: list[Fault] = []
        self.harness_errors: list[str] = []  # harness bugs (answered as 500 InternalError)
        self.purging = 0
        self.rv = 1000
        self.events: collections.deque[tuple[int, str, tuple[str, str], dict[str, Any], dict[str, Any] | None]] = \
            collections.deque(maxlen=self.event_log_size)
        self.events_floor = self.rv
        self.watchers: list[_Watcher] = []
        self.terminating_namespaces: set[str] = set()
        self.terminating_crds: set[str] = set()
        self.stopping = asyncio.Event()
        # (namespace, pod, container port) -> (host, port) where the pod's port is served on this
        # machine (a pod here has no IP of its own): set by the test's kubelet stand-in.
        self.pod_ports: dict[tuple[str, str, int], tuple[str, int]] = {}
        # (namespace, pod) -> run(container, argv, timeout) -> (exit code, stdout, stderr)
        self.pod_execs: dict[tuple[str, str], Callable[[str, list[str]], tuple[int, bytes, bytes]]] = {}
        for group, version, plural, kind, namespaced, subs, shorts, cats in _BUILTINS:
            self.add_type(ResourceType(group=group, plural=plural, kind=kind, namespaced=namespaced,
                                       versions=[version], subresources=subs, short_names=shorts,
                                       categories=cats))
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create_object(self.types[NS_KEY], "v1", None, {"metadata": {"name": name}})

    # ---- types -------------------------------------------------------------------------

    def add_type(self, rtype: ResourceType) -> ResourceType:
        self.types[rtype.key] = rtype
        return rtype

    def find_type(self, group: str, version: str, plural: str) -> ResourceType | None:
        rtype = self.types.get((group, plural))
        return rtype if rtype is not None and version in rtype.versions else None

    def type_for(self, api_version: str, kind: str) -> tuple[ResourceType, str]:
        group, _, version = api_version.rpartition("/")
        for rtype in self.types.values():
            if rtype.group == group and rtype.kind == kind and version in rtype.versions:
                return rtype, version
        raise KeyError(f"{kind} in {api_version} is not served")

    # ---- request entry point -----------------------------------------------------------

    async def __call__(self, raw: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        proxied = _POD_PROXY.fullmatch(raw.rel_url.raw_path)
        if proxied:  # streamed both ways, never read whole: no body limit applies (as kube-apiserver)
            return await self._proxy(raw, *proxied.groups())
        execed = _POD_EXEC.fullmatch(raw.rel_url.raw_path)
        if execed:
            return await self._exec(raw, *map(urllib.parse.unquote, execed.groups()))
        raw = raw.clone(client_max_size=0)  # read it all: the limit is the API server's, below
        body = await raw.read()
        route = _Route.parse(raw.method, raw.path, raw.query)
        record = RequestRecord(method=route.method, path=route.path, query=dict(raw.query),
                               verb=route.verb, group=route.group, version=route.version,
                               resource=route.plural, namespace=route.namespace, name=route.name,
                               subresource=route.subresource, size=len(body),
                               authorization=raw.headers.get("Authorization"))
        self.log.append(record)
        try:
            data = json.loads(body) if body else None
        except ValueError:
            data = None
        kreq = rendering.Request(
            id=len(self._requests), raw_request=raw, url=raw.url, method=raw.method,
            params=dict(raw.query), headers=dict(raw.headers), cookies=dict(raw.cookies),
            body=body, text=body.decode("utf-8", "replace"), data=data,
            action=self._kmock_action(route),
            resource=None if route.discovery else kmock.resource(route.group, route.version, route.plural),
            namespace=route.namespace, name=route.name, subresource=route.subresource)
        self._requests.append(kreq)
        try:
            response = await self._serve(raw, route, kreq, record, body)
        except ApiError as exc:
            response = aiohttp.web.json_response(exc.body(), status=exc.code, headers=exc.headers)
        except Exception as exc:  # a harness bug: answer like a real server would, keep it visible
            self.harness_errors.append(traceback.format_exc())
            response = aiohttp.web.json_response(
                ApiError(500, f"emulator failure: {exc!r}").body(), status=500)
        record.status = response.status
        return response

    async def _proxy(self, raw: aiohttp.web.BaseRequest, namespace: str, target: str,
                     rest: str | None) -> aiohttp.web.StreamResponse:
        """kube-apiserver's pods/proxy subresource: the request (query, body, most headers) is
        forwarded to the pod's port and the answer streamed back, neither read whole."""
        namespace, target = urllib.parse.unquote(namespace), urllib.parse.unquote(target)
        path = raw.path.rstrip("/") or "/"
        record = RequestRecord(method=raw.method.upper(), path=path, query=dict(raw.query),
                               verb=_PROXY_VERBS.get(raw.method.upper(), raw.method.lower()), group="",
                               version="v1", resource="pods", namespace=namespace, name=target,
                               subresource="proxy")
        self.log.append(record)
        route = _Route(method=record.method, path=path, segments=[s for s in path.split("/") if s],
                       verb=record.verb, discovery=False, group="", version="v1", plural="pods",
                       namespace=namespace, name=target, subresource="proxy")
        try:
            await self._apply_faults(route, record)
            host, port, scheme = self._pod_endpoint(namespace, target)
        except ApiError as exc:
            record.status = exc.code
            return aiohttp.web.json_response(exc.body(), status=exc.code, headers=exc.headers)
        url = f"{scheme}://{host}:{port}{rest or '/'}"
        if raw.rel_url.raw_query_string:
            url += "?" + raw.rel_url.raw_query_string
        headers = {k: v for k, v in raw.headers.items() if k.lower() not in _HOP_HEADERS}
        has_body = raw.can_read_body

        async def body() -> Any:
            async for chunk in raw.content.iter_chunked(1 << 16):
                record.size += len(chunk)
                yield chunk

        session = aiohttp.ClientSession(auto_decompress=False, timeout=aiohttp.ClientTimeout(total=None),
                                        connector=aiohttp.TCPConnector(ssl=False, force_close=True))
        response: aiohttp.web.StreamResponse | None = None
        try:
            try:
                upstream = await session.request(raw.method, url, headers=headers, allow_redirects=False,
                                                 data=body() if has_body else None,
                                                 skip_auto_headers=("User-Agent", "Content-Type"))
            except (aiohttp.ClientError, OSError) as exc:
                error = ApiError(503, f"error trying to reach service: dial tcp {host}:{port}: {exc}")
                record.status = 503
                return aiohttp.web.json_response(error.body(), status=503)
            async with upstream:
                response = aiohttp.web.StreamResponse(status=upstream.status, reason=upstream.reason)
                for key, value in upstream.headers.items():
                    if key.lower() not in _HOP_HEADERS:
                        response.headers.add(key, value)
                if upstream.headers.get("Content-Length") is None and raw.method.upper() != "HEAD":
                    response.enable_chunked_encoding()
                record.status = upstream.status
                await response.prepare(raw)
                if raw.method.upper() != "HEAD":
                    async for chunk in upstream.content.iter_chunked(1 << 16):
                        await response.write(chunk)
                await response.write_eof()
                return response
        except (ConnectionResetError, aiohttp.ClientError, RuntimeError):
            if response is None or not response.prepared:
                raise
            return response  # the client or the pod went away mid-stream: the connection is dropped
        finally:
            await session.close()

    async def _exec(self, raw: aiohttp.web.BaseRequest, namespace: str, name: str) -> aiohttp.web.StreamResponse:
        """kube-apiserver's pods/exec subresource over a websocket (v4.channel.k8s.io): the command
        runs where serve_pod_exec says; its output and exit status go back on the channels."""
        record = RequestRecord(method=raw.method.upper(), path=raw.path, query=dict(raw.query), verb="create",
                               group="", version="v1", resource="pods", namespace=namespace, name=name,
                               subresource="exec")
        self.log.append(record)
        route = _Route(method=record.method, path=raw.path, segments=[s for s in raw.path.split("/") if s],
                       verb="create", discovery=False, group="", version="v1", plural="pods",
                       namespace=namespace, name=name, subresource="exec")
        argv, container = raw.query.getall("command", []), raw.query.get("container", "")
        try:
            await self._apply_faults(route, record)
            run = self._exec_target(namespace, name, container)
            container = container or run[1]
        except ApiError as exc:
            record.status = exc.code
            return aiohttp.web.json_response(exc.body(), status=exc.code, headers=exc.headers)
        ws = aiohttp.web.WebSocketResponse(protocols=("v4.channel.k8s.io",))
        await ws.prepare(raw)
        record.status = 101
        try:
            code, out, err = await asyncio.to_thread(run[0], container, argv)
        except Exception as exc:  # the runtime stand-in could not start it: as a missing executable
            code, out, err = 126, b"", f"exec failed: {exc}".encode()
        for channel, data in ((1, out), (2, err)):
            if data:
                await ws.send_bytes(bytes([channel]) + data)
        status = {"metadata": {}, "status": "Success"} if code == 0 else {
            "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
            "message": f"command terminated with non-zero exit code: error executing command {argv}, exit "
                       f"status {code}", "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
        try:
            await ws.send_bytes(b"\x03" + json.dumps(status).encode())
            await ws.close()
        except (ConnectionResetError, RuntimeError):
            pass  # the client went away (its own time-out): the command's end is not reported
        return ws

    def _exec_target(self, namespace: str, name: str, container: str) -> tuple[Callable, str]:
        pod = self.get_object(self.types[("", "pods")], namespace, name)
        if pod is None:
            raise ApiError(404, f'pods "{name}" not found', details={"name": name, "kind": "pods"})
        names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
        if container and container not in names:
            raise ApiError(400, f"container {container} is not valid for pod {name}")
        if (pod.get("status") or {}).get("phase") != "Running":
            raise ApiError(400, f"unable to upgrade connection: pod {name} is not running")
        run = self.pod_execs.get((namespace, name))
        if run is None:
            raise ApiError(500, f"no container runtime stands in for pod {namespace}/{name} (serve_pod_exec)")
        return run, (names[0] if names else "")

    def _pod_endpoint(self, namespace: str, target: str) -> tuple[str, int, str]:
        """Where a pods/proxy request goes: (host, port, scheme), or the API server's refusal."""
        parts = target.split(":")
        scheme, name, port = {1: lambda: ("", parts[0], ""), 2: lambda: ("", parts[0], parts[1]),
                              3: lambda: tuple(parts)}.get(len(parts), lambda: ("", target, ""))()
        if scheme not in ("", "http", "https"):
            raise ApiError(400, f"invalid scheme {scheme!r} in {target!r}")
        pod = self.get_object(self.types[("", "pods")], namespace, name)
        if pod is None:
            raise ApiError(404, f'pods "{name}" not found', details={"name": name, "kind": "pods"})
        containers = (pod.get("spec") or {}).get("containers") or []
        ports = [p for c in containers for p in c.get("ports") or []]
        if not port:  # as kube-apiserver: the first container port the pod declares, else 80
            number = ports[0]["containerPort"] if ports else 80
        elif port.isdigit():
            number = int(port)
        else:
            named = [p["containerPort"] for p in ports if p.get("name") == port]
            if not named:
                raise ApiError(503, f"no endpoints available for service \"{target}\"")
            number = named[0]
        status = pod.get("status") or {}
        if status.get("phase") != "Running" or not status.get("podIP"):
            raise ApiError(503, f"error trying to reach service: pod {name} is {status.get('phase')} "
                                "and has no IP")
        address = self.pod_ports.get((namespace, name, number))
        if address is None:
            raise ApiError(503, f"error trying to reach service: dial tcp {status['podIP']}:{number}: "
                                "connect: connection refused")
        return address[0], address[1], scheme or "http"

    @staticmethod
    def _kmock_action(route: _Route) -> kmock.action | None:
        return {"list": kmock.action.LIST, "watch": kmock.action.WATCH, "get": kmock.action.FETCH,
                "create": kmock.action.CREATE, "patch": kmock.action.UPDATE,
                "update": kmock.action.UPDATE, "delete": kmock.action.DELETE}.get(route.verb)

    async def _serve(self, raw: aiohttp.web.BaseRequest, route: _Route, kreq: rendering.Request,
                     record: RequestRecord, body: bytes) -> aiohttp.web.StreamResponse:
        if len(body) > MAX_REQUEST_BODY_BYTES:
            raise ApiError(413, f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}")
        await self._apply_faults(route, record)
        if self._payloads:  # reactions a test declared through kmock's DSL win over the emulation
            try:
                return await kmock.RawHandler._handle(self, kreq)
            except NotImplementedError:
                pass
        return await self._dispatch(raw, route, body)

    async def _apply_faults(self, route: _Route, record: RequestRecord) -> None:
        """The first injected fault matching the request: its delay, then its failure (if any)."""
        for fault in self.faults:
            if fault.matches(route.path, route.method, route.verb):
                fault.hits += 1
                record.fault = True
                if fault.delay:
                    try:
                        await asyncio.wait_for(self.stopping.wait(), fault.delay)
                    except asyncio.TimeoutError:
                        pass
                if fault.status:
                    headers = {}
                    details: dict[str, Any] = {}
                    if fault.retry_after is not None:
                        headers["Retry-After"] = str(fault.retry_after)
                        details["retryAfterSeconds"] = fault.retry_after
                    message = fault.message or _MESSAGES.get(fault.status, "injected failure")
                    raise ApiError(fault.status, message, details=details, headers=headers)
                break

    # ---- routing -----------------------------------------------------------------------

    async def _dispatch(self, raw: aiohttp.web.BaseRequest, route: _Route, body: bytes) -> aiohttp.web.StreamResponse:
        if route.discovery:
            if route.method != "GET":
                raise ApiError(405, "the server does not allow this method on the requested resource")
            if route.segments[:1] in (["healthz"], ["livez"], ["readyz"]):
                return aiohttp.web.Response(text="ok")
            return self._json(self._discovery(route))
        rtype = self.find_type(route.group or "", route.version or "", route.plural or "")
        if rtype is None or (route.subresource and route.subresource not in rtype.subresources) \
                or (route.namespace is not None and not rtype.namespaced) \
                or (route.namespace is None and rtype.namespaced and route.name is not None):
            raise ApiError(404, "the server could not find the requested resource")
        version = route.version or ""
        query = raw.query
        dry_run = "All" in query.getall("dryRun", [])
        verb = route.verb
        if verb == "list":
            return self._json(self.list_objects(rtype, version, route.namespace, query))
        if verb == "watch":
            return await self._watch(raw, rtype, version, route)
        if verb == "get":
            obj = self._must_get(rtype, route.namespace, route.name or "")
            return self._json(self._render(rtype, version, obj, route.subresource))
        manager = query.get("fieldManager") or (raw.headers.get("User-Agent") or "unknown").split("/")[0]
        if verb == "create":
            if route.name:
                raise ApiError(405, "the server does not allow this method on the requested resource")
            obj = self.create_object(rtype, version, route.namespace, self._parse_body(raw, body),
                                     dry_run=dry_run, manager=manager)
            return self._json(self._render(rtype, version, obj), status=201)
        if verb == "update":
            obj = self.update_object(rtype, version, route.namespace, route.name or "",
                                     self._parse_body(raw, body), route.subresource,
                                     dry_run=dry_run, manager=manager)
            return self._json(self._render(rtype, version, obj, route.subresource))
        if verb == "patch":
            status, obj = self.patch_object(rtype, version, route.namespace, route.name or "",
                                            raw.content_type, self._parse_body(raw, body),
                                            route.subresource, dry_run=dry_run, manager=manager,
                                            force=query.get("force") == "true",
                                            field_manager=query.get("fieldManager"))
            return self._json(self._render(rtype, version, obj, route.subresource), status=status)
        if verb == "delete":
            options = self._parse_body(raw, body) if body else {}
            result = self.delete_object(rtype, version, route.namespace, route.name or "",
                                        options or {}, dry_run=dry_run)
            return self._json(result)
        if verb == "deletecollection":
            self.delete_collection(rtype, route.namespace, query, dry_run=dry_run)
            return self._json({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})
        raise ApiError(405, "the server does not allow this method on the requested resource")

    @staticmethod
    def _json(payload: Any, status: int = 200) -> aiohttp.web.Response:
        return aiohttp.web.Response(status=status, body=json.dumps(payload).encode(),
                                    content_type="application/json")

    @staticmethod
    def _parse_body(raw: aiohttp.web.BaseRequest, body: bytes) -> Any:
        try:
            if "yaml" in raw.content_type:
                return yaml.load(body.decode(), Loader=_YAML_LOADER)
            return json.loads(body) if body else None
        except (ValueError, yaml.YAMLError) as exc:
            raise ApiError(400, f"the request body could not be decoded: {exc}") from None

    # ---- discovery ---------------------------------------------------------------------

    def _groups(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for rtype in self.types.values():
            versions = groups.setdefault(rtype.group, [])
            versions.extend(v for v in rtype.versions if v not in versions)
        return {g: sorted(vs, key=_version_priority, reverse=True) for g, vs in groups.items()}

    def _discovery(self, route: _Route) -> dict[str, Any]:
        segments = route.segments
        groups = self._groups()

        def group_body(name: str) -> dict[str, Any]:
            versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in groups[name]]
            return {"name": name, "versions": versions, "preferredVersion": versions[0]}

        if not segments:
            paths = {"/api", "/api/v1", "/apis", "/version", "/healthz", "/livez", "/readyz"}
            for group, versions in groups.items():
                if group:
                    paths.add(f"/apis/{group}")
                    paths.update(f"/apis/{group}/{v}" for v in versions)
            return {"paths": sorted(paths)}
        if segments == ["version"]:
            major, minor, *_ = self.kubernetes_version.split(".")
            return {"major": major, "minor": minor, "gitVersion": f"v{self.kubernetes_version}",
                    "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                    "buildDate": "2024-08-13T07:28:49Z", "goVersion": "go1.22.5", "compiler": "gc",
                    "platform": "linux/amd64"}
        if segments == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:443"}]}
        if segments == ["apis"]:
            return {"kind": "APIGroupList", "apiVersion": "v1",
                    "groups": [group_body(g) for g in groups if g]}
        if segments[0] == "apis" and len(segments) == 2 and segments[1] in groups and segments[1]:
            return {"kind": "APIGroup", "apiVersion": "v1", **group_body(segments[1])}
        if (segments[0] == "api" and len(segments) == 2) or (segments[0] == "apis" and len(segments) == 3):
            group = "" if segments[0] == "api" else segments[1]
            version = segments[-1]
            if version in groups.get(group, []):
                return self._resource_list(group, version)
        raise ApiError(404, "the server could not find the requested resource")

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        resources = []
        for rtype in self.types.values():
            if rtype.group != group or version not in rtype.versions:
                continue
            entry: dict[str, Any] = {"name": rtype.plural, "singularName": rtype.singular,
                                     "namespaced": rtype.namespaced, "kind": rtype.kind,
                                     "verbs": list(ALL_VERBS)}
            if rtype.short_names:
                entry["shortNames"] = list(rtype.short_names)
            if rtype.categories:
                entry["categories"] = list(rtype.categories)
            resources.append(entry)
            for sub in rtype.subresources:
                sub_entry = {"name": f"{rtype.plural}/{sub}", "singularName": "",
                             "namespaced": rtype.namespaced, "kind": rtype.kind,
                             "verbs": list(SUBRESOURCE_VERBS) if sub != "finalize" else ["update"]}
                if sub == "scale":
                    sub_entry.update(kind="Scale", group="autoscaling", version="v1")
                resources.append(sub_entry)
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version, "resources": resources}

    # ---- store primitives ----------------------------------------------------------------

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def get_object(self, rtype: ResourceType, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.store[rtype.key].get((namespace or "", name))

    def _must_get(self, rtype: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self.get_object(rtype, namespace, name)
        if obj is None:
            raise ApiError(404, f'{rtype.qualified} "{name}" not found', details=rtype.details(name))
        return obj

    def _render(self, rtype: ResourceType, version: str, obj: Mapping[str, Any],
                subresource: str | None = None, *, typed_item: bool = False) -> dict[str, Any]:
        if subresource == "scale":
            meta = obj["metadata"]
            return {"kind": "Scale", "apiVersion": "autoscaling/v1",
                    "metadata": {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                                      "creationTimestamp") if k in meta},
                    "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
                    "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                               "selector": ""}}
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
        if typed_item and not rtype.custom:
            return body  # items of built-in lists carry no kind/apiVersion on a real server
        return {"apiVersion": rtype.api_version(version), "kind": rtype.kind, **body}

    def _emit(self, kind: str, rtype: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        rv = int(obj["metadata"]["resourceVersion"])
        if len(self.events) == self.events.maxlen:
            self.events_floor = self.events[0][0]
        self.events.append((rv, kind, rtype.key, obj, old))
        namespace = obj["metadata"].get("namespace")
        for watcher in self.watchers:
            if watcher.key == rtype.key and watcher.namespace in (None, namespace):
                watcher.queue.put_nowait((rv, kind, obj, old))

    def _put(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.store[rtype.key][(meta.get("namespace") or "", meta["name"])] = obj

    def _remove(self, rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        self.store[rtype.key].pop((meta.get("namespace") or "", meta["name"]), None)
        gone = {**obj, "metadata": {**meta, "resourceVersion": str(self.next_rv())}}
        self._emit("DELETED", rtype, gone, obj)
        self._after_removal(rtype, gone)
        return gone

    # ---- validation shared by writes --------------------------------------------------------

    def _check_gvk(self, rtype: ResourceType, version: str, body: Mapping[str, Any],
                   expect_kind: str | None = None) -> None:
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if rtype.custom and (not api_version or not kind):
            raise ApiError(400, "Object 'Kind' is missing in the request body" if not kind
                           else "Object 'apiVersion' is missing in the request body")
        if api_version and api_version != rtype.api_version(version):
            raise ApiError(400, f"the API version in the data ({api_version}) does not match the "
                                f"expected API version ({rtype.api_version(version)})")
        if kind and kind != (expect_kind or rtype.kind):
            raise ApiError(400, f"the kind in the data ({kind}) does not match the expected kind "
                                f"({expect_kind or rtype.kind})")

    def _check_name(self, rtype: ResourceType, name: str) -> None:
        if rtype.group == "rbac.authorization.k8s.io":
            ok = name not in (".", "..") and "/" not in name and "%" not in name
        elif rtype.key == NS_KEY:
            ok = len(name) <= 63 and bool(_DNS_LABEL.fullmatch(name))
        else:
            ok = len(name) <= 253 and bool(_DNS_SUBDOMAIN.fullmatch(name))
        if not ok:
            raise ApiError(422, f'{rtype.kind} "{name}" is invalid: metadata.name: Invalid value: '
                                f'"{name}": a lowercase RFC 1123 subdomain must consist of lower case '
                                f"alphanumeric characters, '-' or '.'",
                           details=rtype.details(name, causes=[{"reason": "FieldValueInvalid",
                                                                "field": "metadata.name"}]))

    def _managed_fields(self, rtype: ResourceType, version: str, obj: Mapping[str, Any],
                        previous: list[dict[str, Any]] | None, manager: str, operation: str,
                        subresource: str | None, fields_of: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        source = dict(fields_of if fields_of is not None else obj)
        meta = source.get("metadata") or {}
        tracked = {k: v for k, v in source.items() if k not in ("apiVersion", "kind", "metadata")}
        if subresource == "status":
            tracked = {"status": tracked.get("status")} if "status" in tracked else {}
        elif "status" in rtype.subresources:
            tracked.pop("status", None)
        tracked_meta = {k: meta[k] for k in ("labels", "annotations", "finalizers", "ownerReferences") if k in meta}
        if tracked_meta and subresource != "status":
            tracked["metadata"] = tracked_meta
        entry = {"manager": manager, "operation": operation, "apiVersion": rtype.api_version(version),
                 "time": _now(), "fieldsType": "FieldsV1", "fieldsV1": _fields_v1(tracked)}
        if subresource:
            entry["subresource"] = subresource
        same = (manager, operation, subresource)
        kept = [e for e in previous or [] if (e.get("manager"), e.get("operation"), e.get("subresource")) != same]
        return kept + [entry]

    def _normalize(self, rtype: ResourceType, version: str, obj: dict[str, Any],
                   existing: dict[str, Any] | None) -> dict[str, Any]:
        """Type-specific server behaviour applied on every write."""
        if rtype.key == ("", "secrets"):
            data = dict(obj.get("data") or {})
            for key, value in data.items():
                try:
                    base64.b64decode(value or "", validate=True)
                except (binascii.Error, TypeError, ValueError):
                    raise ApiError(400, f"illegal base64 data in Secret data[{key!r}]") from None
            for key, value in (obj.pop("stringData", None) or {}).items():
                data[key] = base64.b64encode(str(value).encode()).decode()
            if data or "data" in obj:
                obj["data"] = data
            obj.setdefault("type", "Opaque")
        elif rtype.key == NS_KEY:
            labels = obj["metadata"].setdefault("labels", {})
            labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            if existing is None:
                obj["status"] = {"phase": "Active"}
        elif rtype.key in (("", "pods"), ("", "persistentvolumeclaims")) and existing is None:
            obj["status"] = {"phase": "Pending"}
        elif rtype.custom and rtype.schemas.get(version):
            schema = rtype.schemas[version]
            meta = obj.get("metadata")
            obj = prune(obj, schema)
            obj["metadata"] = meta
            obj = apply_defaults(obj, schema)
        return obj

    # ---- create ---------------------------------------------------------------------------

    def create_object(self, rtype: ResourceType, version: str, namespace: str | None, body: Any, *,
                      dry_run: bool = False, manager: str = "harness") -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        self._check_gvk(rtype, version, body)
        obj = copy.deepcopy({k: v for k, v in body.items() if k not in ("apiVersion", "kind")})
        meta = obj["metadata"] = dict(obj.get("metadata") or {})
        if rtype.namespaced:
            namespace = namespace or meta.get("namespace") or None
            if namespace is None:
                raise ApiError(400, "the namespace of the object is required")
            if meta.get("namespace") not in (None, "", namespace):
                raise ApiError(400, "the namespace of the provided object does not match the "
                                    "namespace sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise ApiError(500, "resourceVersion should not be set on objects to be created")
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise ApiError(422, f"{rtype.kind}.{rtype.group or 'core'} is invalid: metadata.name: "
                                    "Required value: name or generateName is required")
            meta["name"] = meta["generateName"] + "".join(random.choices(_NAME_CHARS, k=5))
        name = meta["name"]
        self._check_name(rtype, name)
        if rtype.namespaced:
            if self.get_object(self.types[NS_KEY], None, namespace) is None:
                raise ApiError(404, f'namespaces "{namespace}" not found',
                               details={"name": namespace, "kind": "namespaces"})
            if namespace in self.terminating_namespaces:
                raise ApiError(403, f"{rtype.qualified} \"{name}\" is forbidden: unable to create new "
                                    f"content in namespace {namespace} because it is being terminated",
                               details=rtype.details(name))
        if self.get_object(rtype, namespace, name) is not None:
            raise ApiError(409, f'{rtype.qualified} "{name}" already exists', reason="AlreadyExists",
                           details=rtype.details(name))
        for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                    "selfLink", "managedFields", "generation"):
            meta.pop(key, None)
        if "status" in rtype.subresources:
            obj.pop("status", None)
        if rtype.key == CRD_KEY:
            self._validate_crd(obj)
            obj["status"] = {"conditions": [], "acceptedNames": {"plural": "", "kind": ""},
                             "storedVersions": [v["name"] for v in obj["spec"]["versions"] if v.get("storage")]}
        obj = self._normalize(rtype, version, obj, None)
        meta = obj["metadata"]
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
        meta["managedFields"] = self._managed_fields(rtype, version, obj, None, manager, "Update", None)
        self._admit(rtype, obj)
        if dry_run:
            return obj
        meta["resourceVersion"] = str(self.next_rv())
        self._put(rtype, obj)
        self._emit("ADDED", rtype, obj)
        self._after_create(rtype, obj)
        return obj

    # ---- admission: stand-ins for validating webhooks (EmulatedCluster.add_admission_webhook) ----

    def _admit(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        for name, code, check in getattr(self, "admission_webhooks", ()):
            refusal = check(self, rtype, obj)
            if refusal:
                raise ApiError(code, f'admission webhook "{name}" denied the request: {refusal}')

    def _after_create(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        if rtype.key == NS_KEY and self.namespace_defaults:
            ns = obj["metadata"]["name"]
            self.create_object(self.types[("", "serviceaccounts")], "v1", ns,
                               {"metadata": {"name": "default"}}, manager="kube-controller-manager")
            self.create_object(self.types[("", "configmaps")], "v1", ns,
                               {"metadata": {"name": "kube-root-ca.crt", "annotations": {
                                   "kubernetes.io/description": "Contains a CA bundle that can be used "
                                   "to verify the kube-apiserver when using internal endpoints such as "
                                   "the internal service IP or kubernetes.default.svc."}},
                                "data": {"ca.crt": _FAKE_CA}}, manager="kube-controller-manager")
        elif rtype.key == CRD_KEY:
            name = obj["metadata"]["name"]
            self._later(self.crd_establish_delay, lambda: self._establish_crd(name))

    def _later(self, delay: float, fn: Callable[[], None]) -> None:
        def run() -> None:
            try:
                fn()
            except Exception:
                self.harness_errors.append(traceback.format_exc())
        asyncio.get_running_loop().call_later(max(delay, 0.0), run)

    # ---- update / patch --------------------------------------------------------------------

    def update_object(self, rtype: ResourceType, version: str, namespace: str | None, name: str, body: Any,
                      subresource: str | None = None, *, dry_run: bool = False, manager: str = "harness",
                      operation: str = "Update", fields_of: Mapping[str, Any] | None = None) -> dict[str, Any]:
        existing = self._must_get(rtype, namespace, name)
        if not isinstance(body, dict):
            raise ApiError(400, "the request body must be a JSON object")
        if subresource == "scale":
            self._check_gvk(rtype, "v1", {"kind": body.get("kind")}, expect_kind="Scale")
            replicas = (body.get("spec") or {}).get("replicas")
            pinned = (body.get("metadata") or {}).get("resourceVersion")
            body = merge_patch(existing, {"spec": {"replicas": replicas}, "metadata": {"resourceVersion": pinned}})
            subresource = None
        else:
            self._check_gvk(rtype, version, body)
        meta_in = body.get("metadata") or {}
        if meta_in.get("name") not in (None, "", name):
            raise ApiError(400, f"the name of the object ({meta_in.get('name')}) does not match the "
                                f"name on the URL ({name})")
        if rtype.namespaced and meta_in.get("namespace") not in (None, "", namespace):
            raise ApiError(400, "the namespace of the provided object does not match the namespace "
                                "sent on the request")
        current_rv = existing["metadata"]["resourceVersion"]
        if meta_in.get("resourceVersion") and meta_in["resourceVersion"] != current_rv:
            raise ApiError(409, f'Operation cannot be fulfilled on {rtype.qualified} "{name}": the object '
                                "has been modified; please apply your changes to the latest version and "
                                "try again", reason="Conflict", details=rtype.details(name))
        new = copy.deepcopy({k: v for k, v in body.items() if k not in ("apiVersion", "kind")})
        old_meta = existing["metadata"]
        if subresource in ("status", "finalize"):
            base = copy.deepcopy(existing)
            if subresource == "status":
                if "status" in new:
                    base["status"] = new["status"]
                else:
                    base.pop("status", None)
            else:
                base.setdefault("spec", {})["finalizers"] = (new.get("spec") or {}).get("finalizers") or []
            new = base
        else:
            meta = new["metadata"] = dict(new.get("metadata") or {})
            for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                        "namespace", "name", "generation", "managedFields"):
                if key in old_meta:
                    meta[key] = old_meta[key]
                else:
                    meta.pop(key, None)
            if "status" in rtype.subresources or rtype.key == NS_KEY:
                if "status" in existing:
                    new["status"] = copy.deepcopy(existing["status"])
                else:
                    new.pop("status", None)
            if rtype.key == CRD_KEY:
                self._validate_crd(new)
                stored = new.setdefault("status", {}).setdefault("storedVersions", [])
                stored.extend(v["name"] for v in new["spec"]["versions"]
                              if v.get("storage") and v["name"] not in stored)
        new = self._normalize(rtype, version, new, existing)
        meta = new["metadata"]
        meta.pop("resourceVersion", None)
        with_status = "status" in rtype.subresources
        if _spec_of(new, with_status) != _spec_of(existing, with_status):
            meta["generation"] = int(old_meta.get("generation") or 1) + 1
        volatile = ("managedFields", "resourceVersion")
        unchanged = {**new, "metadata": {k: v for k, v in meta.items() if k not in volatile}} == \
            {**existing, "metadata": {k: v for k, v in old_meta.items() if k not in volatile}}
        if unchanged:
            return existing  # a no-op update writes nothing: same resourceVersion, as on a real server
        meta["managedFields"] = self._managed_fields(rtype, version, new, old_meta.get("managedFields"),
                                                     manager, operation, subresource, fields_of)
        if dry_run:
            meta["resourceVersion"] = current_rv
            return new
        meta["resourceVersion"] = str(self.next_rv())
        self._put(rtype, new)
        self._emit("MODIFIED", rtype, new, existing)
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and rtype.key != NS_KEY:
            return self._remove(rtype, new)
        if rtype.key == CRD_KEY and subresource is None:
            self._refresh_crd(new)
        return new

    def patch_object(self, rtype: ResourceType, version: str, namespace: str | None, name: str,
                     content_type: str, patch: Any, subresource: str | None = None, *,
                     dry_run: bool = False, manager: str = "harness", force: bool = False,
                     field_manager: str | None = None) -> tuple[int, dict[str, Any]]:
        content_type = (content_type or "").split(";")[0].strip()
        if content_type == "application/apply-patch+yaml":
            if not field_manager:
                raise ApiError(422, "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required "
                                    "value: is required for apply patch")
            if not isinstance(patch, dict):
                raise ApiError(400, "the apply patch must be an object")
            if self.get_object(rtype, namespace, name) is None and subresource is None:
                meta = dict(patch.get("metadata") or {})
                if meta.get("name") not in (None, name):
                    raise ApiError(400, "the name of the object does not match the name on the URL")
                meta["name"] = name
                return 201, self.create_object(rtype, version, namespace, {**patch, "metadata": meta},
                                               dry_run=dry_run, manager=field_manager)
            existing = self._must_get(rtype, namespace, name)
            new = merge_patch(existing, patch)
            return 200, self.update_object(rtype, version, namespace, name, {**new, "metadata": {
                **new["metadata"], "resourceVersion": (patch.get("metadata") or {}).get("resourceVersion")}},
                subresource, dry_run=dry_run, manager=field_manager, operation="Apply", fields_of=patch)
        existing = self._must_get(rtype, namespace, name)
        if subresource == "scale":
            base: Any = self._render(rtype, version, existing, "scale")
        else:
            base = self._render(rtype, version, existing)
        if content_type == "application/json-patch+json":
            if not isinstance(patch, list):
                raise ApiError(400, "a JSON patch must be a list of operations")
            try:
                new = jsonpatch.apply_patch(base, patch)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                raise ApiError(422, f"the JSON patch could not be applied: {exc}") from None
        elif content_type == "application/merge-patch+json":
            new = merge_patch(base, patch)
        elif content_type == "application/strategic-merge-patch+json":
            if rtype.custom:
                raise ApiError(415, "the body of the request was in an unknown format - accepted media "
                                    "types include: application/json-patch+json, application/merge-patch+json, "
                                    "application/apply-patch+yaml")
            new = strategic_merge_patch(base, patch)
        else:
            raise ApiError(415, f"the body of the request was in an unknown format: {content_type}")
        if not isinstance(new, dict):
            raise ApiError(422, "the patched object is not an object")
        # The base carries the current resourceVersion: only a patch that sets another one conflicts.
        return 200, self.update_object(rtype, version, namespace, name, new, subresource,
                                       dry_run=dry_run, manager=manager,
                                       fields_of=patch if isinstance(patch, dict) else None)

    # ---- delete ---------------------------------------------------------------------------

    def delete_object(self, rtype: ResourceType, version: str, namespace: str | None, name: str,
                      options: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        existing = self._must_get(rtype, namespace, name)
        meta = existing["metadata"]
        pre = (options or {}).get("preconditions") or {}
        for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            if pre.get(field) and pre[field] != meta.get(field):
                raise ApiError(409, f"Precondition failed: {label} in precondition: {pre[field]}, "
                                    f"{label} in object meta: {meta.get(field)}", reason="Conflict",
                               details=rtype.details(name))
        if rtype.key == NS_KEY and name in ("default", "kube-system", "kube-public"):
            raise ApiError(403, f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                           details=rtype.details(name))
        if dry_run:
            return self._render(rtype, version, existing)
        if rtype.key == NS_KEY:
            return self._render(rtype, version, self._terminate_namespace(existing))
        if rtype.key == CRD_KEY:
            return self._render(rtype, version, self._terminate_crd(existing))
        if meta.get("finalizers"):
            return self._render(rtype, version, self._mark_deleted(rtype, existing))
        gone = self._remove(rtype, existing)
        if rtype.key in _RETURN_DELETED:
            return self._render(rtype, version, gone)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": rtype.details(name, uid=meta.get("uid"))}

    def _mark_deleted(self, rtype: ResourceType, obj: dict[str, Any], **extra: Any) -> dict[str, Any]:
        if obj["metadata"].get("deletionTimestamp"):
            return obj
        marked = copy.deepcopy(obj)
        marked["metadata"].update(deletionTimestamp=_now(), deletionGracePeriodSeconds=0,
                                  resourceVersion=str(self.next_rv()))
        for key, value in extra.items():
            marked[key] = value
        self._put(rtype, marked)
        self._emit("MODIFIED", rtype, marked, obj)
        return marked

    def _delete_or_mark(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        if obj["metadata"].get("finalizers"):
            self._mark_deleted(rtype, obj)
        else:
            self._remove(rtype, obj)

    def delete_collection(self, rtype: ResourceType, namespace: str | None, query: Mapping[str, str], *,
                          dry_run: bool = False) -> None:
        for obj in self._select(rtype, namespace, query):
            if dry_run:
                continue
            if rtype.key == NS_KEY:
                self._terminate_namespace(obj)
            elif rtype.key == CRD_KEY:
                self._terminate_crd(obj)
            else:
                self._delete_or_mark(rtype, obj)

    def _terminate_namespace(self, ns_obj: dict[str, Any]) -> dict[str, Any]:
        name = ns_obj["metadata"]["name"]
        if name in self.terminating_namespaces:
            return ns_obj
        self.terminating_namespaces.add(name)
        status = {**(ns_obj.get("status") or {}), "phase": "Terminating"}
        marked = self._mark_deleted(self.types[NS_KEY], ns_obj, status=status)

        def purge() -> None:
            self.purging += 1
            try:
                for rtype in list(self.types.values()):
                    if rtype.namespaced:
                        for obj in [o for (ns, _), o in self.store[rtype.key].items() if ns == name]:
                            self._delete_or_mark(rtype, obj)
            finally:
                self.purging -= 1
            self._finish_terminations()
        self._later(self.namespace_deletion_delay, purge)
        return marked

    def _terminate_crd(self, crd: dict[str, Any]) -> dict[str, Any]:
        name = crd["metadata"]["name"]
        if name in self.terminating_crds:
            return crd
        self.terminating_crds.add(name)
        finalizers = list(crd["metadata"].get("finalizers") or []) + [CRD_CLEANUP_FINALIZER]
        crd = {**crd, "metadata": {**crd["metadata"], "finalizers": finalizers}}
        status = copy.deepcopy(crd.get("status") or {})
        status["conditions"] = [c for c in status.get("conditions", []) if c.get("type") != "Terminating"] + [
            {"type": "Terminating", "status": "True", "lastTransitionTime": _now(),
             "reason": "InstanceDeletionInProgress", "message": "CustomResource deletion is in progress"}]
        marked = self._mark_deleted(self.types[CRD_KEY], crd, status=status)
        spec = crd["spec"]

        def purge() -> None:
            rtype = self.types.get((spec["group"], spec["names"]["plural"]))
            self.purging += 1
            try:
                if rtype is not None and rtype.custom:
                    for obj in list(self.store[rtype.key].values()):
                        self._delete_or_mark(rtype, obj)
            finally:
                self.purging -= 1
            self._finish_terminations()
        self._later(0, purge)
        return marked

    def _after_removal(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        if rtype.key == CRD_KEY:
            spec = obj["spec"]
            key = (spec["group"], spec["names"]["plural"])
            if key in self.types and self.types[key].custom:
                del self.types[key]
                self.store.pop(key, None)
            self.terminating_crds.discard(obj["metadata"]["name"])
        elif rtype.key == NS_KEY:
            self.terminating_namespaces.discard(obj["metadata"]["name"])
        elif (self.terminating_namespaces or self.terminating_crds) and not self.purging:
            self._finish_terminations()

    def _finish_terminations(self) -> None:
        for name in list(self.terminating_namespaces):
            remaining = any(ns == name for rtype in self.types.values() if rtype.namespaced
                            for (ns, _) in self.store[rtype.key])
            ns_obj = self.get_object(self.types[NS_KEY], None, name)
            if not remaining and ns_obj is not None:
                self._remove(self.types[NS_KEY], ns_obj)
        for name in list(self.terminating_crds):
            crd = self.get_object(self.types[CRD_KEY], None, name)
            if crd is None:
                continue
            key = (crd["spec"]["group"], crd["spec"]["names"]["plural"])
            if not self.store.get(key):
                finalizers = [f for f in crd["metadata"].get("finalizers", []) if f != CRD_CLEANUP_FINALIZER]
                if finalizers:  # someone else's finalizer still holds the CRD
                    continue
                self._remove(self.types[CRD_KEY], crd)

    # ---- list / watch ------------------------------------------------------------------------

    def _select(self, rtype: ResourceType, namespace: str | None, query: Mapping[str, str]) -> list[dict[str, Any]]:
        labels_ok = parse_label_selector(query.get("labelSelector", ""))
        fields_ok = parse_field_selector(query.get("fieldSelector", ""))
        items = sorted(self.store[rtype.key].items())
        return [obj for (ns, _), obj in items
                if (namespace is None or ns == namespace)
                and labels_ok(obj["metadata"].get("labels") or {}) and fields_ok(obj)]

    def list_objects(self, rtype: ResourceType, version: str, namespace: str | None,
                     query: Mapping[str, str]) -> dict[str, Any]:
        items = self._select(rtype, namespace, query)
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise ApiError(400, f"invalid limit: {query.get('limit')!r}") from None
        list_rv = self.rv
        if query.get("continue"):
            start, list_rv = _decode_continue(query["continue"])
            items = [o for o in items if (o["metadata"].get("namespace") or "", o["metadata"]["name"]) > start]
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if limit > 0 and len(items) > limit:
            last = items[limit - 1]["metadata"]
            meta["continue"] = _encode_continue((last.get("namespace") or "", last["name"]), list_rv)
            if not query.get("labelSelector") and not query.get("fieldSelector"):
                meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        return {"kind": rtype.list_kind, "apiVersion": rtype.api_version(version), "metadata": meta,
                "items": [self._render(rtype, version, o, typed_item=True) for o in items]}

    async def _watch(self, raw: aiohttp.web.BaseRequest, rtype: ResourceType, version: str,
                     route: _Route) -> aiohttp.web.StreamResponse:
        query = raw.query
        labels_ok = parse_label_selector(query.get("labelSelector", ""))
        fields_ok = parse_field_selector(query.get("fieldSelector", ""))
        if route.name:  # the legacy form /namespaces/x/pods/name?watch=1
            by_name = parse_field_selector(f"metadata.name={route.name}")
            fields_ok = (lambda f: lambda o: f(o) and by_name(o))(fields_ok)
        try:
            timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
            since = query.get("resourceVersion", "")
            since_rv = int(since) if since not in ("", "0") else None
        except ValueError:
            raise ApiError(400, "invalid timeoutSeconds or resourceVersion") from None

        def matches(obj: Mapping[str, Any] | None) -> bool:
            if obj is None or route.namespace not in (None, obj["metadata"].get("namespace")):
                return False
            return labels_ok(obj["metadata"].get("labels") or {}) and fields_ok(obj)

        def translate(kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> str | None:
            now_in, was_in = matches(obj), matches(old)
            if kind == "MODIFIED":
                return "MODIFIED" if now_in and was_in else "ADDED" if now_in else "DELETED" if was_in else None
            return kind if now_in else None

        response = aiohttp.web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(raw)

        async def send(kind: str, obj: dict[str, Any]) -> None:
            line = json.dumps({"type": kind, "object": obj}) + "\n"
            await response.write(line.encode())

        watcher = _Watcher(rtype.key, route.namespace)
        self.watchers.append(watcher)
        getter: asyncio.Future[Any] | None = None
        try:
            if since_rv is None:
                for obj in self._select(rtype, route.namespace, {}):
                    if matches(obj):
                        await send("ADDED", self._render(rtype, version, obj))
            elif since_rv < self.events_floor:
                await send("ERROR", ApiError(410, f"too old resource version: {since_rv} ({self.events_floor})",
                                             reason="Expired").body())
                return response
            else:
                for rv, kind, key, obj, old in list(self.events):
                    if rv > since_rv and key == rtype.key and (out := translate(kind, obj, old)):
                        await send(out, self._render(rtype, version, obj))
            deadline = None if timeout is None else time.monotonic() + timeout
            while not self.stopping.is_set():
                wait = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
                if wait <= 0:
                    break
                getter = getter or asyncio.ensure_future(watcher.queue.get())
                done, _ = await asyncio.wait({getter}, timeout=wait)
                if raw.transport is None or raw.transport.is_closing():
                    break
                if not done:
                    continue
                item, getter = getter.result(), None
                if item is None:
                    break
                _, kind, obj, old = item
                if out := translate(kind, obj, old):
                    await send(out, self._render(rtype, version, obj))
        except (ConnectionResetError, RuntimeError):
            pass  # the client went away
        finally:
            if getter is not None:
                getter.cancel()
            self.watchers.remove(watcher)
        try:
            await response.write_eof()
        except (ConnectionResetError, RuntimeError):
            pass
        return response

    def shutdown_watches(self) -> None:
        self.stopping.set()
        for watcher in self.watchers:
            watcher.queue.put_nowait(None)

    # ---- CRDs -------------------------------------------------------------------------------

    def _validate_crd(self, crd: Mapping[str, Any]) -> None:
        name = crd["metadata"]["name"]
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        problems = []
        if not spec.get("group") or not names.get("plural") or not names.get("kind"):
            problems.append("spec.group, spec.names.plural and spec.names.kind are required")
        elif name != f"{names['plural']}.{spec['group']}":
            problems.append(f"metadata.name: Invalid value: {name!r}: must be spec.names.plural+\".\"+spec.group")
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            problems.append("spec.scope: Unsupported value: must be Namespaced or Cluster")
        versions = spec.get("versions") or []
        if not versions:
            problems.append("spec.versions: Invalid value: must have exactly one version marked as storage version")
        elif sum(1 for v in versions if v.get("storage")) != 1:
            problems.append("spec.versions: Invalid value: must have exactly one version marked as storage version")
        if problems:
            raise ApiError(422, f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: '
                                + "; ".join(problems),
                           details={"name": name, "group": "apiextensions.k8s.io",
                                    "kind": "CustomResourceDefinition"})

    def _crd_type(self, crd: Mapping[str, Any]) -> ResourceType:
        spec = crd["spec"]
        names = spec["names"]
        served = [v for v in spec["versions"] if v.get("served")]
        subresources: list[str] = []
        for v in served:
            for sub in (v.get("subresources") or {}):
                if sub not in subresources:
                    subresources.append(sub)
        return ResourceType(
            group=spec["group"], plural=names["plural"], kind=names["kind"],
            namespaced=spec["scope"] == "Namespaced", versions=[v["name"] for v in served],
            singular=names.get("singular") or names["kind"].lower(),
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            subresources=tuple(subresources), custom=True, list_kind=names.get("listKind") or "",
            schemas={v["name"]: (v.get("schema") or {}).get("openAPIV3Schema") for v in served})

    def _names_conflict(self, crd: Mapping[str, Any]) -> str | None:
        spec = crd["spec"]
        for other in self.store[CRD_KEY].values():
            if other["metadata"]["name"] == crd["metadata"]["name"] or other["spec"]["group"] != spec["group"]:
                continue
            if other["spec"]["names"]["kind"] == spec["names"]["kind"]:
                return f"{spec['names']['kind']!r} is already in use"
        existing = self.types.get((spec["group"], spec["names"]["plural"]))
        if existing is not None and not existing.custom:
            return f"{spec['names']['plural']!r} is already in use"
        return None

    def _establish_crd(self, name: str) -> None:
        crd = self.get_object(self.types[CRD_KEY], None, name)
        if crd is None or crd["metadata"].get("deletionTimestamp"):
            return
        status = copy.deepcopy(crd.get("status") or {})
        now = _now()
        conflict = self._names_conflict(crd)
        names = dict(crd["spec"]["names"])
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
        if conflict:
            conditions = [{"type": "NamesAccepted", "status": "False", "lastTransitionTime": now,
                           "reason": "KindConflict", "message": conflict},
                          {"type": "Established", "status": "False", "lastTransitionTime": now,
                           "reason": "NotAccepted", "message": "not all names are accepted"}]
        else:
            conditions = [{"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
                           "reason": "NoConflicts", "message": "no conflicts found"},
                          {"type": "Established", "status": "True", "lastTransitionTime": now,
                           "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}]
            status["acceptedNames"] = names
            self.add_type(self._crd_type(crd))
        status["conditions"] = conditions
        updated = {**crd, "status": status,
                   "metadata": {**crd["metadata"], "resourceVersion": str(self.next_rv())}}
        self._put(self.types[CRD_KEY], updated)
        self._emit("MODIFIED", self.types[CRD_KEY], updated, crd)

    def _refresh_crd(self, crd: dict[str, Any]) -> None:
        """After an update of an established CRD: serve its new versions and schemas."""
        established = any(c.get("type") == "Established" and c.get("status") == "True"
                          for c in (crd.get("status") or {}).get("conditions", []))
        key = (crd["spec"]["group"], crd["spec"]["names"]["plural"])
        if established and not crd["metadata"].get("deletionTimestamp") and key in self.types:
            self.add_type(self._crd_type(crd))


# --------------------------------------------------------------------------------------------
# kmock's Server, without its process-global DNS interceptor
# --------------------------------------------------------------------------------------------

class _NoInterceptor:
    async def __aexit__(self, *_: Any) -> None:
        return None


_INTERCEPTOR_LOCK = threading.Lock()


class _Server(kmock.Server):
    """kmock's Server, minus its aiohttp resolver patch.

    kmock.Server patches ``aiohttp.connector.TCPConnector._resolve_host`` (a process-global) so
    fake host names resolve to it, and insists on last-in-first-out exits. Clusters started and
    stopped in any order from several threads would trip that check; our clients use the
    127.0.0.1 URL anyway, so the patch is undone right after it is made, under a lock.
    """

    async def __aenter__(self) -> "_Server":
        with _INTERCEPTOR_LOCK:
            await super().__aenter__()
            assert self._managed_interceptor is not None
            await self._managed_interceptor.__aexit__(None, None, None)
            self._managed_interceptor = _NoInterceptor()  # type: ignore[assignment]
        return self


# --------------------------------------------------------------------------------------------
# The public, thread-based wrapper
# --------------------------------------------------------------------------------------------

class EmulatedCluster:
    """One emulated Kubernetes API server on 127.0.0.1:<free port>, run in a background thread.

    Parameters:
        name: used for the thread name, the default kubeconfig context, and error messages.
        crd_establish_delay: seconds between creating a CRD and it being Established (and its
            resources served). Even at 0, the create response is not yet Established.
        namespace_deletion_delay: seconds a deleted namespace stays Terminating.
        namespace_defaults: add the ``default`` ServiceAccount and ``kube-root-ca.crt``
            ConfigMap to every namespace, as a real cluster's controllers do.
        kubernetes_version: what ``/version`` reports.
    """

    def __init__(self, name: str = "emulated", *, crd_establish_delay: float = 0.0,
                 namespace_deletion_delay: float = 0.0, namespace_defaults: bool = True,
                 kubernetes_version: str = "1.31.0", event_log_size: int = 100_000):
        self.name = name
        self._options = dict(crd_establish_delay=crd_establish_delay,
                             namespace_deletion_delay=namespace_deletion_delay,
                             namespace_defaults=namespace_defaults,
                             kubernetes_version=kubernetes_version, event_log_size=event_log_size)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._emulator: KubeApiEmulator | None = None
        self._url: str | None = None
        self._error: BaseException | None = None
        self._clients: list[Any] = []
        self._tmpdir: str | None = None

    # ---- lifecycle --------------------------------------------------------------------------

    def start(self) -> "EmulatedCluster":
        if self._thread is not None:
            raise RuntimeError(f"cluster {self.name!r} is already started")
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True,
                                        name=f"kube-emulator-{self.name}")
        self._thread.start()
        if not ready.wait(timeout=30):
            raise RuntimeError(f"cluster {self.name!r} did not start within 30 s")
        if self._error is not None:
            self._thread.join(timeout=5)
            self._thread = None
            raise RuntimeError(f"cluster {self.name!r} failed to start") from self._error
        self._tmpdir = tempfile.mkdtemp(prefix=f"kube-emulator-{self.name}-")
        return self

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main(ready))
        except BaseException as exc:  # reported to start() if it happens before ready
            self._error = exc
            ready.set()
        finally:
            loop.close()

    async def _main(self, ready: threading.Event) -> None:
        self._stop = asyncio.Event()
        emulator = KubeApiEmulator(**self._options)  # type: ignore[arg-type]
        async with emulator, _Server(emulator, host="127.0.0.1") as server:
            self._emulator = emulator
            self._url = str(server.url).rstrip("/")
            ready.set()
            await self._stop.wait()
            emulator.shutdown_watches()

    def stop(self) -> None:
        if self._thread is None:
            return
        for client in self._clients:
            try:
                client.close()
            except Exception:
                pass
        self._clients.clear()
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)
        self._thread = None
        self._url = None  # the request log (``requests``, ``count``) stays readable after stop
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> "EmulatedCluster":
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.stop()

    # ---- where and how to connect ---------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._url is None:
            raise RuntimeError(f"cluster {self.name!r} is not started")
        return self._url

    @property
    def emulator(self) -> KubeApiEmulator:
        """The kmock handler (for kmock DSL reactions; mutate state through the helpers below)."""
        if self._emulator is None:
            raise RuntimeError(f"cluster {self.name!r} is not started")
        return self._emulator

    def kubeconfig_path(self, tmpdir: str | os.PathLike[str], context_name: str | None = None,
                        namespace: str = "default") -> str:
        """Write a kubeconfig with one context for this cluster; return its path."""
        context = context_name or self.name
        path = os.path.join(os.fspath(tmpdir), f"kubeconfig-{context}.yaml")
        return write_kubeconfig(path, {context: self}, current=context, namespace=namespace)

    def configuration(self) -> Any:
        import kubernetes.client
        config = kubernetes.client.Configuration()
        config.host = self.url
        config.api_key = {"authorization": "emulated-token"}
        config.api_key_prefix = {"authorization": "Bearer"}
        return config

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for this cluster (closed by ``stop()``)."""
        import kubernetes.client
        client = kubernetes.client.ApiClient(self.configuration())
        self._clients.append(client)
        return client

    def dynamic_client(self) -> Any:
        """A ``kubernetes.dynamic.DynamicClient`` whose discovery cache is private to this cluster."""
        import kubernetes.dynamic
        assert self._tmpdir is not None
        cache = os.path.join(self._tmpdir, f"discovery-{uuid.uuid4().hex}.json")
        return kubernetes.dynamic.DynamicClient(self.api_client(), cache_file=cache)

    # ---- running code on the cluster's loop -----------------------------------------------------

    def call(self, fn: Callable[[KubeApiEmulator], Any], timeout: float = 30) -> Any:
        """Run ``fn(emulator)`` on the cluster's loop (where all state lives) and return its result."""
        if self._loop is None or self._emulator is None:
            raise RuntimeError(f"cluster {self.name!r} is not started")
        emulator = self._emulator

        async def run() -> Any:
            return fn(emulator)
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    # ---- state helpers (bypass HTTP, same rules) ----------------------------------------------

    def create_objects(self, objects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Create objects as a POST would (same checks, metadata, events), without HTTP."""
        objects = [copy.deepcopy(dict(o)) for o in objects]

        def create(em: KubeApiEmulator) -> list[dict[str, Any]]:
            created = []
            for obj in objects:
                rtype, version = em.type_for(obj["apiVersion"], obj["kind"])
                namespace = (obj.get("metadata") or {}).get("namespace")
                created.append(em._render(rtype, version, em.create_object(rtype, version, namespace, obj)))
            return created
        return self.call(create)

    def get_object(self, api_version: str, kind: str, name: str,
                   namespace: str | None = None) -> dict[str, Any] | None:
        def get(em: KubeApiEmulator) -> dict[str, Any] | None:
            rtype, version = em.type_for(api_version, kind)
            obj = em.get_object(rtype, namespace, name)
            return None if obj is None else copy.deepcopy(em._render(rtype, version, obj))
        return self.call(get)

    def list_objects(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        def list_(em: KubeApiEmulator) -> list[dict[str, Any]]:
            rtype, version = em.type_for(api_version, kind)
            return [copy.deepcopy(em._render(rtype, version, o)) for o in em._select(rtype, namespace, {})]
        return self.call(list_)

    def add_resource(self, group: str, version: str, plural: str, kind: str, *,
                     namespaced: bool = True, subresources: Iterable[str] = ()) -> None:
        """Serve one more built-in-like resource (no schema, no CRD object)."""
        rtype = ResourceType(group=group, plural=plural, kind=kind, namespaced=namespaced,
                             versions=[version], subresources=tuple(subresources))
        self.call(lambda em: em.add_type(rtype))

    def add_admission_webhook(self, name: str, check: Callable[[KubeApiEmulator, ResourceType, dict[str, Any]],
                                                           str | None], code: int = 403) -> None:
        """A stand-in validating webhook: `check(emulator, type, object)` runs on every create, in the
        emulator's thread (so it may read the store); a non-empty answer refuses the create with `code`."""
        # kept out of __attrs_post_init__ on purpose: a stand-in is a test's own addition
        self.call(lambda em: em.__dict__.setdefault("admission_webhooks", []).append((name, code, check)))

    def serve_pod_port(self, namespace: str, pod: str, port: int, address: tuple[str, int] | None) -> None:
        """Where the API server's pod proxy finds ``port`` of ``pod`` on this machine (a stand-in for
        the pod's IP, which a process here has not); None forgets it."""
        def serve(em: KubeApiEmulator) -> None:
            if address is None:
                em.pod_ports.pop((namespace, pod, int(port)), None)
            else:
                em.pod_ports[(namespace, pod, int(port))] = (address[0], int(address[1]))
        self.call(serve)

    def serve_pod_exec(self, namespace: str, pod: str,
                       run: Callable[[str, list[str]], tuple[int, bytes, bytes]] | None) -> None:
        """What runs an exec in ``pod``: run(container, argv) -> (exit code, stdout, stderr), called
        on a worker thread (a stand-in for the container runtime); None forgets it."""
        def serve(em: KubeApiEmulator) -> None:
            if run is None:
                em.pod_execs.pop((namespace, pod), None)
            else:
                em.pod_execs[(namespace, pod)] = run
        self.call(serve)

    @property
    def resource_version(self) -> int:
        """The cluster's current resourceVersion (the last write)."""
        return self.call(lambda em: em.rv)

    @property
    def errors(self) -> list[str]:
        """Tracebacks of harness bugs met while serving (answered as 500s); should stay empty."""
        return list(self.emulator.harness_errors)

    # ---- faults ---------------------------------------------------------------------------------

    def inject(self, fault: Fault) -> Fault:
        self.call(lambda em: em.faults.append(fault))
        return fault

    def fail_next(self, path: str | re.Pattern[str] | None, status: int = 500, *, times: int | None = 1,
                  method: str | None = None, verb: str | None = None, retry_after: int | None = None,
                  message: str | None = None) -> Fault:
        """The next ``times`` matching requests answer ``status`` with a Status body (None: forever).

        ``path`` is an exact path (trailing slash ignored), a glob with ``*``, a compiled regex
        (searched), or None for any path; ``method`` (GET...) and ``verb`` (list, create...)
        narrow it further.
        """
        return self.inject(Fault(path=path, status=status, times=times, method=method, verb=verb,
                                 retry_after=retry_after, message=message))

    def throttle_next(self, path: str | re.Pattern[str] | None, *, times: int | None = 1,
                      retry_after: int = 1, method: str | None = None, verb: str | None = None) -> Fault:
        """The next ``times`` matching requests answer 429 TooManyRequests with Retry-After."""
        return self.fail_next(path, 429, times=times, method=method, verb=verb, retry_after=retry_after)

    def hang_next(self, path: str | re.Pattern[str] | None, seconds: float, *, times: int | None = 1,
                  method: str | None = None, verb: str | None = None, status: int | None = None) -> Fault:
        """The next ``times`` matching requests wait ``seconds`` before being served (or failing
        with ``status``); a client that gives up earlier sees a read timeout."""
        return self.inject(Fault(path=path, delay=seconds, status=status, times=times,
                                 method=method, verb=verb))

    def clear_faults(self) -> None:
        self.call(lambda em: em.faults.clear())

    # ---- request log ------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RequestRecord]:
        return list(self.emulator.log)

    def count(self, *, verb: str | None = None, path: str | None = None, method: str | None = None,
              resource: str | None = None, namespace: str | None = None, group: str | None = None,
              param: str | None = None, status: int | None = None) -> int:
        """How many requests matched all the given criteria (``param``: a query parameter present)."""
        def ok(r: RequestRecord) -> bool:
            return ((verb is None or r.verb == verb)
                    and (path is None or r.path == (path.rstrip("/") or "/"))
                    and (method is None or r.method == method.upper())
                    and (resource is None or r.resource == resource)
                    and (namespace is None or r.namespace == namespace)
                    and (group is None or r.group == group)
                    and (param is None or param in r.query)
                    and (status is None or r.status == status))
        return sum(1 for r in self.emulator.log if ok(r))

    def counts(self) -> collections.Counter[tuple[str, str]]:
        """Requests counted by (verb, path)."""
        return collections.Counter((r.verb, r.path) for r in self.emulator.log)

    def reset_requests(self) -> None:
        self.call(lambda em: em.log.clear())


def write_kubeconfig(path: str | os.PathLike[str], contexts: Mapping[str, EmulatedCluster], *,
                     current: str | None = None, namespace: str = "default") -> str:
    """Write one kubeconfig with a context per emulated cluster (e.g. ``source`` and ``dest``)."""
    config = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": name, "cluster": {"server": cluster.url}} for name, cluster in contexts.items()],
        "users": [{"name": name, "user": {"token": "emulated-token"}} for name in contexts],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}
                     for name in contexts],
        "current-context": current or next(iter(contexts)),
    }
    path = os.fspath(path)
    with open(path, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    return path
