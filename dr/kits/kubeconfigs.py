"""One kubeconfig resolver, with kubectl's rules, for every exporter that reads a cluster.

- An explicit kubeconfig (the source's `kubeconfig` option, or `--kubeconfig`) is the only
  file read, as `kubectl --kubeconfig` does.
- Else `$KUBECONFIG`, a list (':' on POSIX): every existing file is merged; for each map key
  (a cluster, context or user name) the first file that defines it wins, and `current-context`
  comes from the first file that sets it (the python client takes the last: not used for this).
- Else `~/.kube/config`; with none of these, the in-cluster service account.
Relative file paths inside a kubeconfig (certificates, keys, token files) resolve against the
directory of the file that holds them, as kubectl resolves them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import yaml

HOME_CONFIG = "~/.kube/config"
MAPS = ("clusters", "contexts", "users")
# The fields, per map, that name a file (kubectl's ResolvePaths).
PATH_FIELDS = {"clusters": ("certificate-authority",),
               "users": ("client-certificate", "client-key", "tokenFile")}


class KubeconfigError(Exception):
    """A kubeconfig that cannot be read (names the file and what is wrong)."""


@dataclass(frozen=True)
class Kubeconfig:
    """What to connect with: a merged kubeconfig (`config`), or None for in-cluster credentials."""
    config: dict | None
    files: tuple[str, ...]
    context: str | None

    @property
    def where(self) -> str:
        """The files read, for messages (or the in-cluster account)."""
        return ":".join(self.files) if self.files else "the in-cluster service account"


def kubeconfig_files(explicit: str | None, env: dict | None = None) -> list[str]:
    """The files kubectl would read: `explicit` alone, else $KUBECONFIG's existing ones, else ~/.kube/config."""
    env = os.environ if env is None else env
    if explicit:
        return [os.path.expanduser(explicit)]
    listed = [os.path.expanduser(p) for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [p for p in listed if os.path.isfile(p)]
    home = os.path.expanduser(HOME_CONFIG)
    return [home] if os.path.isfile(home) else []


def resolve(explicit: str | None, context: str | None, env: dict | None = None) -> Kubeconfig:
    """The kubeconfig to use for (`explicit` file, `context`); config None means in-cluster."""
    files = kubeconfig_files(explicit, env)
    if not files:
        return Kubeconfig(None, (), context)
    return Kubeconfig(merge([_read(path) | {"__file__": path} for path in files]), tuple(files), context)


def merge(documents: list[dict]) -> dict:
    """kubectl's merge: first definition of each name wins, first `current-context` set wins."""
    merged: dict = {name: [] for name in MAPS}
    for document in documents:
        base = os.path.dirname(os.path.abspath(document["__file__"]))
        for name in MAPS:
            known = {entry.get("name") for entry in merged[name]}
            merged[name] += [_absolute(name, entry, base) for entry in document.get(name) or []
                             if isinstance(entry, dict) and entry.get("name") not in known]
        if document.get("current-context") and "current-context" not in merged:
            merged["current-context"] = document["current-context"]
    return merged


def _read(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {exc}") from None
    if not isinstance(document, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a kubeconfig (a YAML mapping with clusters, "
                              "contexts and users)")
    return document


def _absolute(name: str, entry: dict, base: str) -> dict:
    """`entry` with its relative file paths made absolute against `base` (its file's folder)."""
    key = name[:-1]  # clusters -> cluster, contexts -> context, users -> user
    body = entry.get(key)
    fields = PATH_FIELDS.get(name, ())
    if not isinstance(body, dict) or not any(body.get(f) for f in fields):
        return entry
    fixed = {f: os.path.join(base, os.path.expanduser(body[f])) for f in fields
             if isinstance(body.get(f), str) and body[f]}
    return entry | {key: body | fixed}


def load_into(configuration, kubeconfig: Kubeconfig) -> None:
    """Fill a kubernetes.client.Configuration from `kubeconfig` (or the in-cluster account).

    Raises KubeconfigError naming the files and the context when that fails.
    """
    import kubernetes.config  # slow to import: only when a cluster is read
    try:
        if kubeconfig.config is None:
            kubernetes.config.load_incluster_config(client_configuration=configuration)
        else:
            kubernetes.config.load_kube_config_from_dict(kubeconfig.config, context=kubeconfig.context,
                                                         client_configuration=configuration,
                                                         persist_config=False)
    except (kubernetes.config.ConfigException, OSError, KeyError, TypeError, ValueError) as exc:
        where = kubeconfig.where
        if kubeconfig.config is not None:
            where += f" (context {kubeconfig.context or 'current'})"
        raise KubeconfigError(f"cannot load Kubernetes credentials from {where}: {exc}") from None


def parse_destination(to: str, default_kubeconfig: str | None) -> tuple[str | None, str | None]:
    """`--to` as (kubeconfig, context).

    `CONTEXT` names a context of the source's kubeconfig (or $KUBECONFIG / ~/.kube/config);
    `PATH:CONTEXT` names a kubeconfig file and a context in it (`PATH:` its current context).
    Context names may contain ':' (EKS ARNs), so the split is at the first ':' whose left side
    is an existing file; when there is none, the whole value is a context name.
    """
    for index, char in enumerate(to):
        if char == ":" and os.path.isfile(to[:index]):
            return to[:index], (to[index + 1:] or None)
    if os.path.isfile(to):
        return to, None
    return default_kubeconfig, to
