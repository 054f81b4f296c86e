"""Who the helm exporter logs in as: the kit's one credential resolver (dr.kits.oci.credentials),
set up the way helm looks, and the words of a refusal.

OCI registries (reading charts at backup, pushing at restore), first match wins:
  1. the plan's `auth_file` (a docker config.json);
  2. helm's own registry config, where `helm registry login` writes: $HELM_REGISTRY_CONFIG, else
     $HELM_CONFIG_HOME/registry/config.json, else $XDG_CONFIG_HOME (~/.config)/helm/registry/config.json;
  3. docker's: $REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json, ~/.docker/config.json;
  4. an ECR token for `<account>.dkr.ecr.<region>.amazonaws.com` (boto3's AWS credentials).
In each file `auths[host]`, then `credHelpers[host]` / `credsStore` (`docker-credential-<name> get`).
HTTP chart repositories (`index.yaml`) get the login in `auth_file` alone, as before: a docker
login is for registries, and a chart server need not be one.
"""

from __future__ import annotations

import os

from dr.kits.oci.credentials import Credentials, docker_files

ELSEWHERE = "helm's and docker's config files, their credential helpers and ECR"


def helm_registry_config() -> str:
    """The file `helm registry login` writes (helm's own lookup of it)."""
    if os.environ.get("HELM_REGISTRY_CONFIG"):
        return os.environ["HELM_REGISTRY_CONFIG"]
    config_home = os.environ.get("HELM_CONFIG_HOME") or os.path.join(
        os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config"), "helm")
    return os.path.join(config_home, "registry", "config.json")


def registry_logins(auth_file: str | None) -> Credentials:
    """The resolver for OCI registries (the order above)."""
    return Credentials(auth_file, ecr=True, default_files=[helm_registry_config(), *docker_files()])


def repository_logins(auth_file: str | None) -> Credentials:
    """The resolver for HTTP chart repositories: `auth_file` alone."""
    return Credentials(auth_file, ecr=False, default_files=[])


def refused(logins: Credentials, host: str, elsewhere: str = "") -> str:
    """Why `host` let us in no further: no login found (and where dr looked), or the one found
    refused (and where it came from). Never the credential."""
    found = logins.for_host(host)
    if found is not None:
        return f"{host} refused the login for it in {found.source}"
    path = logins.auth_file
    missing = path and not os.path.exists(path)
    where = f"auth_file {path} {'does not exist' if missing else 'has no login for it'}" if path else ""
    if elsewhere:
        where = f"{where}, nor do {elsewhere}" if where else f"none in {elsewhere}"
    return (f"{host} needs credentials{f' ({where})' if where else ''}: give auth_file, a docker config.json "
            f"with a login for {host} (docker login or helm registry login write one)")
