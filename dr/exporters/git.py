"""The `git` exporter: the platform's declarations kept in Git repositories.

Each repository becomes one artifact: a `git bundle` of a mirror clone, so every ref is kept
(branches, tags, notes, anything under refs/). A bundle is one self-checking file that
`git clone` reads directly: restoring needs nothing but git and the target remote.

An unchanged remote is not cloned again. The change token is a digest of `git ls-remote`
(every advertised ref and where HEAD points); the clone happens inside the content callable,
which the sink calls only when the token differs from the previous snapshot's.

Credentials embedded in URLs (https://user:token@host/...) never reach a message, a finding or
the catalog (which is not encrypted): everything shown or stored goes through redact().
"""

from __future__ import annotations

import configparser
import hashlib
import os
import re
import shutil
import tempfile
from typing import BinaryIO, Iterator
from urllib.parse import unquote, urlparse

import git
from pydantic import Field, field_validator

from dr.contract import (CREDENTIALS_DIR, ArtifactSink, AuditDeclarations, ContentReader, Credential, DeployNeeds,
                         Destination, Discovered, DrillComparison, Exporter, ExporterOptions, Ordering, OrderingRule,
                         Outcome, OutcomeStatus, Planning, RemapKind, RestoredContent, RestoreRequest, Rewriter, RunNeeds,
                         Sizing, prefix_rewrite)
from dr.kits.validators import listed_once, plain_name
from dr.model.artifacts import Artifact, Dependency, Sensitivity
from dr.model.recovery import normalize

KIND = "git-bundle"
# A backup job must fail, not hang, when a remote asks for credentials; C locale for stable text.
_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class GitFailure(Exception):
    """A git command failed; the message is already redacted."""


def redact(text: str) -> str:
    """Hide the `user:password@` part of every URL in `text`."""
    return _CREDENTIALS.sub("***@", text)


def _check_url(url: str) -> str:
    """Refuse URLs git would read as an option, and the command-running ext:: transport."""
    if not url.strip():
        raise ValueError("must not be empty")
    if url.startswith("-"):
        raise ValueError(f"{redact(url)!r} starts with '-' (git would read it as an option)")
    if url.lower().startswith(("ext::", "ext://")):
        raise ValueError("the ext:: transport runs arbitrary commands and is not allowed")
    return url


class RepositorySpec(ExporterOptions):
    name: str = Field(description="identity of the artifact; replaces {name} in a restore target")
    url: str = Field(description="any git URL, or a local path (relative: against the plan's folder)")

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        return plain_name(value)

    @field_validator("url")
    @classmethod
    def _safe_url(cls, value: str) -> str:
        return _check_url(value)


def _local_path(url: str) -> str | None:
    """The filesystem path of a local repository URL, None for a remote one (git's own rules)."""
    if url.startswith("file://"):
        return unquote(urlparse(url).path)
    if _SCHEME.match(url):
        return None
    head = url.split("/", 1)[0]
    return None if ":" in head else url  # scp-like user@host:path is ssh


def _absolute(url: str) -> str:
    """Relative local targets resolve against the working directory, not git's cwd."""
    path = _local_path(url)
    return os.path.abspath(path) if path is not None and not url.startswith("file://") else url


def _git(args: list[str], cwd: str | None = None) -> str:
    """Run git; on failure raise GitFailure with git's own words, credentials redacted."""
    status, out, err = git.Git(cwd).execute(["git", *args], env=_GIT_ENV, with_extended_output=True,
                                            with_exceptions=False)
    if status != 0:
        detail = (err or out or f"exit status {status}").strip()
        raise GitFailure(redact(f"git {args[0]} failed: {detail}"))
    return out


def _advertised(url: str) -> tuple[dict[str, str], str, str]:
    """(refs, HEAD's target, change token) as the remote advertises them, fetching nothing."""
    lines = sorted(line for line in _git(["ls-remote", "--symref", "--", url]).splitlines() if line.strip())
    refs, head = {}, ""
    for line in lines:
        left, _, name = line.partition("\t")
        if left.startswith("ref: ") and name == "HEAD":
            head = left[len("ref: "):]
        elif name != "HEAD" and not name.endswith("^{}"):
            refs[name] = left
    token = "ls-remote:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return refs, head, token


def _refs_digest(refs: dict[str, str]) -> str:
    """A fingerprint of a repository's refs: each name and the hash it points at."""
    return "refs:" + hashlib.sha256("".join(f"{n} {refs[n]}\n" for n in sorted(refs)).encode()).hexdigest()


def _local_refs(repo_dir: str) -> dict[str, str]:
    """Every ref of a local repository, as `git ls-remote` would list it (tags unpeeled)."""
    out = _git(["for-each-ref", "--format=%(objectname) %(refname)"], cwd=repo_dir)
    return {name: sha for sha, _, name in (line.partition(" ") for line in out.splitlines() if line)}


def _pin(mirror: str, refs: dict[str, str]) -> None:
    """Make a fresh clone hold exactly the advertised refs.

    The remote may move between ls-remote and clone; the bundle must match the refs in the
    catalog and the change token, or the next backup would wrongly reuse it.
    """
    actual = _local_refs(mirror)
    for name in sorted(actual.keys() - refs.keys()):
        _git(["update-ref", "-d", name], cwd=mirror)
    for name, sha in sorted(refs.items()):
        if actual.get(name) != sha:
            try:
                _git(["cat-file", "-e", sha], cwd=mirror)
            except GitFailure:
                raise GitFailure(f"the remote changed during the backup ({name} at {sha} is gone); "
                                 "run the backup again") from None
            _git(["update-ref", name, sha], cwd=mirror)


def _bundle(url: str, refs: dict[str, str]) -> BinaryIO:
    """Clone --mirror, bundle every ref, verify; return the open bundle.

    The temporary directory is removed before returning: on POSIX the open file stays readable,
    so nothing is left behind however the sink's reading ends.
    """
    with tempfile.TemporaryDirectory(prefix="dr-git-") as tmp:
        mirror, bundle = os.path.join(tmp, "mirror.git"), os.path.join(tmp, "repo.bundle")
        _git(["clone", "--quiet", "--mirror", "--", url, mirror])
        _pin(mirror, refs)
        _git(["bundle", "create", "--quiet", bundle, "--all"], cwd=mirror)
        _git(["bundle", "verify", "--quiet", bundle], cwd=mirror)
        return open(bundle, "rb")


def _clobbered(current: dict[str, str], wanted: dict[str, str]) -> list[str]:
    """Target refs a mirror push would move or delete (new refs only add, and are safe)."""
    return sorted(name for name, sha in current.items() if wanted.get(name) != sha)


def _remote_rewrite(reference: str, old: str, new: str) -> str | None:
    """The same remote however it is spelled (a trailing '/' or '.git'), or a path below `old`."""
    if normalize(reference) == normalize(old):
        return new
    return prefix_rewrite(reference, old, new)


ORIGIN = "git-remote"  # the dependency that records where a repository came from



def _work_tree(folder: str) -> str | None:
    """The Git work tree that holds `folder`, if any (a `.git` entry in it or a parent)."""
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

class GitExporter(Exporter, Planning, AuditDeclarations, DeployNeeds, DrillComparison):
    type_name = "git"
    contract_version = 2
    sizing = Sizing(scratch_limit="10Gi")  # mirror clones go under /tmp before they are bundled
    summary = "Git repositories (every branch, tag, note and ref) as verified git bundles"
    # the git step pushes to the new remote (its destination); restore() is told `to` only
    remap_kinds = (RemapKind("git-remote", frozenset({ORIGIN}), "old: a remote URL (or a prefix of "
                             "remote URLs); new: the surviving remote the bundles are pushed to",
                             rewrite=_remote_rewrite),)
    origin_kinds = frozenset({ORIGIN})
    ordering = Ordering(frozenset({"declarations"}), (OrderingRule(
        "role:declarations", "role:cluster-objects",
        "Git declarations before what is deployed from them: Argo CD / Flux in the restored cluster "
        "sync from these remotes at once; with a remote missing or empty they fail, or prune what "
        "was just restored"),))

    def destinations(self, artifacts: list[Artifact], rewrite: Rewriter) -> list[Destination]:
        """Each repository goes back to its remote, or to that remote's git-remote remap."""
        groups: dict[str | None, Destination] = {}
        for artifact in artifacts:
            origin = next((d.reference for d in artifact.dependencies if d.kind == ORIGIN), None)
            found = rewrite(ORIGIN, origin) if origin else None
            dest, how = (found.new, found.describe()) if found else (origin, "its own remote (where it came from)")
            groups.setdefault(dest, Destination([], dest, how, f"-> {dest}")).artifacts.append(artifact)
        return list(groups.values())

    def scratch_destination(self, folder: str) -> str | None:
        """Bare repositories `<folder>/<name>.git` (restore() fills in each repository's name)."""
        return os.path.join(folder, "{name}.git")

    class Options(ExporterOptions):
        #: the repositories to back up, each {name, url}; names must be unique
        repositories: list[RepositorySpec] = Field(min_length=1)

        @field_validator("repositories")
        @classmethod
        def _unique_names(cls, value: list[RepositorySpec]) -> list[RepositorySpec]:
            listed_once((r.name for r in value), "repository names must be unique")
            return value

    def _url(self, spec: RepositorySpec) -> str:
        """The URL to use: relative local paths resolve against the plan's folder."""
        path = _local_path(spec.url)
        if path is not None and not spec.url.startswith("file://") and not os.path.isabs(path):
            return os.path.normpath(os.path.join(self.context.base_dir, path))
        return spec.url

    def run_needs(self) -> RunNeeds:
        """Remotes over https read a git-credentials file (git's `store` helper, configured
        through the environment so no token is ever in a URL); over ssh, a key and known hosts."""
        urls = [self._url(spec) for spec in self.options.repositories]
        remote = [u for u in urls if _local_path(u) is None]
        needs = RunNeeds(endpoints=remote, paths=[u for u in map(_local_path, urls) if u])
        if any(u.lower().startswith(("https://", "http://")) for u in remote):
            store = f"{CREDENTIALS_DIR}/git-credentials"
            needs.credentials.append(Credential("git-credentials", "lines like https://USER:TOKEN@HOST "
                                                "(git's credential store format)", path=store))
            needs.env.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "credential.helper",
                              "GIT_CONFIG_VALUE_0": f"store --file={store}"})
        if any(not u.lower().startswith(("https://", "http://", "git://")) for u in remote):
            key, hosts = f"{CREDENTIALS_DIR}/git-ssh-key", f"{CREDENTIALS_DIR}/git-known-hosts"
            needs.credentials += [Credential("git-ssh-key", "the ssh private key of the backup's Git user", path=key),
                                  Credential("git-known-hosts", "ssh known_hosts lines of the Git servers", path=hosts)]
            needs.env["GIT_SSH_COMMAND"] = f"ssh -i {key} -o UserKnownHostsFile={hosts} -o IdentitiesOnly=yes"
        return needs

    # -- discover / export ---------------------------------------------------------------
    def discover(self) -> Iterator[Discovered]:
        for spec in self.options.repositories:
            try:
                refs, _, _ = _advertised(self._url(spec))
                yield Discovered(KIND, spec.name, f"{len(refs)} refs")
            except GitFailure as exc:
                yield Discovered(KIND, spec.name, f"unreachable: {exc}")

    def export(self, sink: ArtifactSink) -> None:
        """One artifact per repository; an unreachable one is a finding, not the end of the rest."""
        for spec in self.options.repositories:
            url = self._url(spec)
            try:
                self._export_one(sink, spec.name, url)
            except GitFailure as exc:
                self.context.finding("error", "git-export-failed", f"{spec.name}: {exc}",
                                     repository=spec.name, url=redact(url))

    def _export_one(self, sink: ArtifactSink, name: str, url: str) -> None:
        refs, head, token = _advertised(url)
        # provides: the bundle can recreate this remote elsewhere, so the audit may remap it
        meta: dict = {"refs": refs, "head": head, "provides": [redact(url)]}
        if not refs:
            meta["empty"] = True  # git refuses to bundle nothing: record the fact, no content
        self.context.log(f"git {name}: {len(refs)} refs at {redact(url)}")
        sink.write(KIND, name, (lambda: _bundle(url, refs)) if refs else b"",
                   sensitivity=self.context.sensitivity or Sensitivity.INTERNAL,
                   dependencies=[Dependency("git-remote", redact(url))], meta=meta, change_token=token)

    def plan_copy(self, artifact: Artifact, plan_path: str) -> tuple[str, str] | None:
        """A repository whose URL is the plan's own Git work tree, or one of that tree's remotes."""
        tree = _work_tree(os.path.dirname(plan_path))
        spec = next((s for s in self.options.repositories if s.name == artifact.identity), None)
        if tree is None or spec is None or artifact.kind != KIND:
            return None
        remotes = _remotes(tree)
        # a relative remote path is the work tree's (git resolves it there)
        own = {os.path.realpath(tree), *remotes,
               *(os.path.realpath(os.path.join(tree, p)) for p in map(_local_path, remotes) if p)}
        url = self._url(spec)
        local = _local_path(url)
        if url in own or spec.url in own or (local is not None and os.path.realpath(local) in own):
            return f"the Git repository that holds the plan ({tree})", spec.name
        return None

    # -- restore -------------------------------------------------------------------------
    def restore(self, artifacts: list[Artifact], reader: ContentReader,
                request: RestoreRequest) -> Iterator[Outcome]:
        several = len([a for a in artifacts if a.kind == KIND]) > 1
        for artifact in artifacts:
            if artifact.kind != KIND:
                yield Outcome(artifact.identity, OutcomeStatus.SKIPPED,
                              f"not a {KIND} artifact ({artifact.kind})")
                continue
            problem = self._target_problem(request, several)
            if problem:
                yield Outcome(artifact.identity, OutcomeStatus.FAILED, problem)
                continue
            target = _absolute(request.to.replace("{name}", artifact.identity))
            try:
                yield self._restore_one(artifact, reader, request, target)
            except Exception as exc:  # one repository's failure must not stop the others
                yield Outcome(artifact.identity, OutcomeStatus.FAILED, redact(f"{type(exc).__name__}: {exc}"))

    @staticmethod
    def _target_problem(request: RestoreRequest, several: bool) -> str:
        if not request.to:
            return "restoring git needs a target: --to <URL or path> ({name} becomes the repository name)"
        if several and "{name}" not in request.to:
            return f"several repositories would go to one target {redact(request.to)}; put {{name}} in it"
        try:
            _check_url(request.to)
        except ValueError as exc:
            return f"target {exc}"
        return ""

    def _restore_one(self, artifact: Artifact, reader: ContentReader, request: RestoreRequest,
                     target: str) -> Outcome:
        item, shown = artifact.identity, redact(target)
        refs: dict[str, str] = artifact.meta.get("refs", {})
        path = _local_path(target)
        create = path is not None and (not os.path.exists(path) or not os.listdir(path))
        current = {} if create else _advertised(target)[0]
        if current == refs and not create:
            return Outcome(item, OutcomeStatus.UNCHANGED,
                           f"{shown} already has exactly these {len(refs)} refs")
        clobbered = _clobbered(current, refs)
        if clobbered and not request.overwrite:
            more = len(clobbered) - 5
            listed = ", ".join(clobbered[:5]) + (f" and {more} more" if more > 0 else "")
            return Outcome(item, OutcomeStatus.CONFLICT,
                           f"{shown} has {len(clobbered)} refs that differ from the backup ({listed}); "
                           "restore with --overwrite to replace them")
        where = f"a new bare repository at {shown}" if create else shown
        replacing = f", replacing {len(clobbered)} differing refs" if clobbered else ""
        if request.dry_run:
            return Outcome(item, OutcomeStatus.PLANNED, f"would push {len(refs)} refs to {where}{replacing}")
        self._push(artifact, reader, target, path if create else None, bool(current))
        return Outcome(item, OutcomeStatus.RESTORED, f"pushed {len(refs)} refs to {where}{replacing}; "
                       "the target's refs match the catalog")

    def restored_content(self, artifacts: list[Artifact], reader: ContentReader,
                         request: RestoreRequest) -> Iterator[RestoredContent]:
        """Each repository's refs at the destination against the catalog's (a ref names its whole
        history by hash); a local destination must also hold every object they reach."""
        for artifact in (a for a in artifacts if a.kind == KIND and request.to):
            target = _absolute(request.to.replace("{name}", artifact.identity))
            path = _local_path(target)
            if path is not None and not os.path.isdir(path):
                restored = ""
            else:
                restored = _refs_digest(_advertised(target)[0])
                if path is not None:
                    _git(["fsck", "--connectivity-only", "--no-dangling", "--no-progress"], cwd=path)
            yield RestoredContent(artifact.identity, restored=restored,
                                  backed_up=_refs_digest(artifact.meta.get("refs", {})))

    def _push(self, artifact: Artifact, reader: ContentReader, target: str, create: str | None,
              target_has_refs: bool) -> None:
        """Verify everything locally first; only then create the target and push --mirror."""
        refs: dict[str, str] = artifact.meta.get("refs", {})
        with tempfile.TemporaryDirectory(prefix="dr-git-restore-") as tmp:
            mirror = os.path.join(tmp, "mirror.git")
            _git(["init", "--quiet", "--bare", mirror])
            if refs:
                bundle = os.path.join(tmp, "repo.bundle")
                with reader.open(artifact) as source, open(bundle, "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)  # the reader verifies every chunk
                _git(["bundle", "verify", "--quiet", bundle], cwd=mirror)
                shutil.rmtree(mirror)
                _git(["clone", "--quiet", "--mirror", "--", bundle, mirror])
            if _local_refs(mirror) != refs:
                raise GitFailure("the bundle's refs differ from the catalog's; nothing pushed")
            if create:
                _git(["init", "--quiet", "--bare", create])
            if refs or target_has_refs:  # git refuses to push nothing to nothing
                _git(["push", "--quiet", "--atomic", "--mirror", "--", target], cwd=mirror)  # all or nothing
        head = artifact.meta.get("head", "")
        if create and head.startswith("refs/"):  # a new repository gets the source's default branch
            _git(["symbolic-ref", "HEAD", head], cwd=create)
        if _advertised(target)[0] != refs:
            raise GitFailure(f"after the push, {redact(target)} does not hold the backed-up refs")
