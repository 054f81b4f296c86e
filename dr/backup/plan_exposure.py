"""A snapshot that holds the plan itself: a warning, for the source that put it there.

Sealed names (docs/format.md 8.1) are keyed digests whose key is derived from the plan's
recipients, which the repository does not hold. A source that backs up the plan puts them
into the repository in plaintext, and with them the key: anyone who reads the bucket can then
test guessed names (the caveat of 8.1). So the backup records `plan-in-snapshot` (a warning,
kept in the manifest, reported by `dr audit` with its runbook) naming the source, the object
and the fix. Found:
  files       the plan's file was written (not excluded) by a source that is not `secret`
              (a `secret` one encrypts the file, and the recipients with it);
  git         a repository whose URL is the plan's own Git work tree or one of its remotes;
  kubernetes  a batch holding the ConfigMap `dr deploy render` makes (`configmaps/<ns>/dr-plan`).
"""

from __future__ import annotations

import configparser
import os
from typing import Any
from urllib.parse import unquote, urlparse

from dr.model.artifacts import Artifact, Sensitivity
from dr.model.plans import Plan, SourceSpec

CODE = "plan-in-snapshot"
PLAN_CONFIGMAP = "dr-plan"  # dr.deploy.objects.PLAN_CONFIGMAP (tests hold them equal)
FIX = ("exclude it from the source (files `exclude`, another namespace or repository), or accept that the "
       "bucket's readers can test guessed secret names (docs/format.md 8.1)")


def finding(source: str, what: str, held: str) -> dict[str, Any]:
    return {"severity": "warning", "code": CODE, "audit_code": CODE, "object": held,
            "message": f"source {source} backs up {what} ({held}): the repository then holds the plan's "
                       f"recipients, from which the key of sealed names is derived; {FIX}",
            "action": FIX}


class PlanWatch:
    """Sees every artifact a source writes; `findings` says whether one of them is the plan."""

    def __init__(self, plan: Plan, source: SourceSpec):
        self.source = source.name
        self._plan_file = _file_identity(plan, source) if source.type == "files" else None
        self.findings = _git_findings(plan, source) if source.type == "git" else []

    def seen(self, artifact: Artifact) -> None:
        if artifact.sensitivity == Sensitivity.SECRET:
            return
        if self._plan_file and artifact.identity == self._plan_file and artifact.kind == "file":
            self._once(finding(self.source, "the plan's file", artifact.identity))
        members = artifact.meta.get("members")
        for member in members if isinstance(members, dict) else ():
            parts = member.split("/")
            if len(parts) == 3 and parts[0] == "configmaps" and parts[2] == PLAN_CONFIGMAP:
                self._once(finding(self.source, "the plan's ConfigMap, as dr deploy render makes it", member))

    def _once(self, found: dict[str, Any]) -> None:
        if found not in self.findings:
            self.findings.append(found)


def _file_identity(plan: Plan, source: SourceSpec) -> str | None:
    """The identity the files exporter gives the plan's file (`<basename of the root>/<path
    under it>`), when one of the source's paths is it or holds it."""
    if not plan.path:
        return None
    target = os.path.realpath(plan.path)
    for path in getattr(plan.options.get(source.name), "paths", None) or []:
        root = os.path.realpath(os.path.join(plan.base_dir, path))
        label = os.path.basename(os.path.normpath(path))
        if target == root:
            return label
        if target.startswith(root.rstrip(os.sep) + os.sep):
            return f"{label}/{os.path.relpath(target, root)}"
    return None


def _git_findings(plan: Plan, source: SourceSpec) -> list[dict[str, Any]]:
    tree = _work_tree(os.path.dirname(os.path.realpath(plan.path))) if plan.path else None
    if tree is None:
        return []
    remotes = _remotes(tree)
    own = {os.path.realpath(tree), *remotes, *filter(None, (_local(url, tree) for url in remotes))}
    found = []
    for repo in getattr(plan.options.get(source.name), "repositories", None) or []:
        if repo.url in own or _local(repo.url, plan.base_dir) in own:
            found.append(finding(source.name, f"the Git repository that holds the plan ({tree})", repo.name))
    return found


def _local(url: str, base_dir: str) -> str | None:
    """A local repository URL's real path (relative: against the plan's folder); None when remote."""
    if url.startswith("file://"):
        return os.path.realpath(unquote(urlparse(url).path))
    if "://" in url or ":" in url.split("/", 1)[0]:  # a scheme, or scp-like user@host:path
        return None
    return os.path.realpath(os.path.join(base_dir, url))


def _work_tree(folder: str) -> str | None:
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _remotes(tree: str) -> set[str]:
    """The remote URLs in the work tree's .git/config (a worktree's .git file points elsewhere: none)."""
    config = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        config.read(os.path.join(tree, ".git", "config"), encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return set()
    return {config[s]["url"] for s in config.sections() if s.startswith("remote ") and "url" in config[s]}
