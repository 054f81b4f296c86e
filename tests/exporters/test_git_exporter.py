"""The git exporter against real repositories: every ref survives a round trip."""

from __future__ import annotations

import os

import git
import pytest
from pydantic import ValidationError

from dr.exporters import git as git_exporter
from dr.contract import ExportContext, OutcomeStatus, RestoreRequest
from dr.exporters.git import GitExporter, redact
from dr.contract.registry import Registry
from tests.exporters.conftest import statuses


@pytest.fixture(autouse=True)
def git_identity(monkeypatch):
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@example.invalid")


def commit(repo: git.Repo, path: str, text: str, message: str) -> str:
    full = os.path.join(repo.working_tree_dir, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as handle:
        handle.write(text)
    repo.index.add([path])
    return repo.index.commit(message).hexsha


def for_each_ref(path: str) -> str:
    return git.Repo(path).git.for_each_ref("--format=%(objectname) %(objecttype) %(refname)")


@pytest.fixture
def remote(tmp_path) -> str:
    """A bare remote with branches, both kinds of tag, a note and a custom ref."""
    work = git.Repo.init(tmp_path / "work", initial_branch="main")
    first = commit(work, "deploy/app.yaml", "replicas: 1\n", "first")
    work.create_tag("v1-light", ref=first)
    commit(work, "deploy/app.yaml", "replicas: 2\n", "second")
    work.create_tag("v2", message="release 2")
    work.git.notes("add", "-m", "reviewed", first)
    work.git.checkout("-b", "feature")
    commit(work, "deploy/feature.yaml", "on: true\n", "feature")
    work.git.update_ref("refs/custom/x", first)
    work.git.checkout("main")
    bare = tmp_path / "remotes" / "platform.git"
    git.Repo.init(bare, bare=True, initial_branch="main")
    work.git.push("--mirror", str(bare))
    return str(bare)


def options(url: str, name: str = "platform") -> dict:
    return {"repositories": [{"name": name, "url": url}]}


def test_registered_by_entry_point():
    assert issubclass(Registry().get("git"), GitExporter)  # completed with the defaults of capabilities it lacks


def test_round_trip_keeps_every_ref(harness, remote, tmp_path):
    backup = harness.backup(GitExporter, options("remotes/platform.git"), base_dir=str(tmp_path))
    [artifact] = backup.artifacts
    assert artifact.kind == "git-bundle" and artifact.identity == "platform"
    assert artifact.dependencies[0].kind == "git-remote"
    assert set(artifact.meta["refs"]) >= {"refs/heads/main", "refs/heads/feature", "refs/tags/v1-light",
                                          "refs/tags/v2", "refs/notes/commits", "refs/custom/x"}

    target = str(tmp_path / "restored" / "{name}.git")
    [outcome] = harness.restore(GitExporter, options(remote), backup.artifacts, to=target)
    assert outcome.status == OutcomeStatus.RESTORED, outcome.reason
    restored = str(tmp_path / "restored" / "platform.git")
    assert for_each_ref(restored) == for_each_ref(remote)
    assert git.Repo(restored).git.symbolic_ref("HEAD") == "refs/heads/main"

    [again] = harness.restore(GitExporter, options(remote), backup.artifacts, to=target)
    assert again.status == OutcomeStatus.UNCHANGED and again.reason


def test_a_drill_compares_the_destinations_refs_with_the_catalogs(harness, remote, tmp_path):
    """restored_content: equal after the restore; a moved ref, a missing repository and a lost
    object each show (the last as git fsck's refusal, which fails the drill's step)."""
    backup = harness.backup(GitExporter, options(remote), base_dir=str(tmp_path))
    target = str(tmp_path / "restored" / "{name}.git")
    harness.restore(GitExporter, options(remote), backup.artifacts, to=target)
    exporter = GitExporter(ExportContext("src", GitExporter.Options(**options(remote)), str(tmp_path)))

    def compared():
        return list(exporter.restored_content(backup.artifacts, None, RestoreRequest(to=target)))

    [item] = compared()
    assert item.item == "platform" and item.restored == item.backed_up and item.restored.startswith("refs:")
    restored = git.Repo(tmp_path / "restored" / "platform.git")
    main = restored.git.rev_parse("refs/heads/main")
    restored.git.update_ref("refs/heads/main", restored.git.rev_parse("refs/heads/main~1"))
    assert compared()[0].restored != item.backed_up
    restored.git.update_ref("refs/heads/main", main)
    objects = tmp_path / "restored" / "platform.git" / "objects"
    packs = list((objects / "pack").glob("*.pack")) + [p for p in objects.glob("??/*")]
    for path in packs:
        os.chmod(path, 0o644)
        path.unlink()
    with pytest.raises(git_exporter.GitFailure, match="fsck"):
        compared()
    assert list(exporter.restored_content(backup.artifacts, None, RestoreRequest(to=str(tmp_path / "none" / "{name}"))))[0].restored == ""


def test_unchanged_remote_is_not_cloned_again(harness, remote, tmp_path, monkeypatch):
    first = harness.backup(GitExporter, options(remote), base_dir=str(tmp_path))

    def no_clone(*args):
        raise AssertionError("an unchanged remote was cloned")
    monkeypatch.setattr(git_exporter, "_bundle", no_clone)
    second = harness.backup(GitExporter, options(remote), base_dir=str(tmp_path), parent=first.artifacts)
    assert second.stats["artifacts_reused"] == 1
    assert second.stats["bytes_uploaded"] == 0 and second.stats["bytes_read"] == 0
    assert second.artifacts[0].chunks == first.artifacts[0].chunks
    monkeypatch.undo()

    git.Repo(remote).git.update_ref("refs/custom/y", first.artifacts[0].meta["refs"]["refs/heads/main"])
    third = harness.backup(GitExporter, options(remote), base_dir=str(tmp_path), parent=second.artifacts)
    assert third.stats["artifacts_reused"] == 0
    assert "refs/custom/y" in third.artifacts[0].meta["refs"]


def test_tampered_bundle_fails_and_pushes_nothing(harness, remote, tmp_path):
    backup = harness.backup(GitExporter, options(remote), base_dir=str(tmp_path))
    blob = harness.blob_path(backup.artifacts[0].chunks[0])
    with open(blob, "r+b") as handle:
        handle.seek(100)
        byte = handle.read(1)
        handle.seek(100)
        handle.write(bytes([byte[0] ^ 0xFF]))

    new_target = tmp_path / "new.git"
    [outcome] = harness.restore(GitExporter, options(remote), backup.artifacts, to=str(new_target))
    assert outcome.status == OutcomeStatus.FAILED
    assert "IntegrityError" in outcome.reason
    assert not new_target.exists()

    empty = tmp_path / "empty.git"
    git.Repo.init(empty, bare=True)
    [outcome] = harness.restore(GitExporter, options(remote), backup.artifacts, to=str(empty))
    assert outcome.status == OutcomeStatus.FAILED
    assert for_each_ref(str(empty)) == ""


def test_conflict_overwrite_and_dry_run(harness, remote, tmp_path):
    backup = harness.backup(GitExporter, options(remote), base_dir=str(tmp_path))
    other = git.Repo.init(tmp_path / "other", initial_branch="main")
    commit(other, "x", "other\n", "unrelated")
    target = tmp_path / "target.git"
    git.Repo.init(target, bare=True)
    other.git.push(str(target), "main:refs/heads/main")
    before = for_each_ref(str(target))

    [planned] = harness.restore(GitExporter, options(remote), backup.artifacts, to=str(target),
                                dry_run=True, overwrite=True)
    assert planned.status == OutcomeStatus.PLANNED and str(target) in planned.reason
    [conflict] = harness.restore(GitExporter, options(remote), backup.artifacts, to=str(target))
    assert conflict.status == OutcomeStatus.CONFLICT and "refs/heads/main" in conflict.reason
    assert for_each_ref(str(target)) == before

    [done] = harness.restore(GitExporter, options(remote), backup.artifacts, to=str(target), overwrite=True)
    assert done.status == OutcomeStatus.RESTORED, done.reason
    assert for_each_ref(str(target)) == for_each_ref(remote)


def test_dry_run_creates_nothing(harness, remote, tmp_path):
    backup = harness.backup(GitExporter, options(remote), base_dir=str(tmp_path))
    target = tmp_path / "later.git"
    [outcome] = harness.restore(GitExporter, options(remote), backup.artifacts, to=str(target), dry_run=True)
    assert outcome.status == OutcomeStatus.PLANNED and str(target) in outcome.reason
    assert not target.exists()


def test_empty_repository_is_recorded_and_restored(harness, tmp_path):
    empty = tmp_path / "empty.git"
    git.Repo.init(empty, bare=True)
    backup = harness.backup(GitExporter, options(str(empty), "blank"), base_dir=str(tmp_path))
    [artifact] = backup.artifacts
    assert artifact.meta["empty"] is True and artifact.meta["refs"] == {} and artifact.size == 0

    target = tmp_path / "restored-blank.git"
    [outcome] = harness.restore(GitExporter, options(str(empty)), backup.artifacts, to=str(target))
    assert outcome.status == OutcomeStatus.RESTORED, outcome.reason
    assert git.Repo(target).bare and for_each_ref(str(target)) == ""
    [again] = harness.restore(GitExporter, options(str(empty)), backup.artifacts, to=str(target))
    assert again.status == OutcomeStatus.UNCHANGED


def test_empty_backup_over_a_populated_target_needs_overwrite(harness, remote, tmp_path):
    empty = tmp_path / "empty.git"
    git.Repo.init(empty, bare=True)
    backup = harness.backup(GitExporter, options(str(empty), "blank"), base_dir=str(tmp_path))
    [conflict] = harness.restore(GitExporter, options(str(empty)), backup.artifacts, to=remote)
    assert conflict.status == OutcomeStatus.CONFLICT and "refs/heads/main" in conflict.reason
    before = for_each_ref(remote)
    [refused] = harness.restore(GitExporter, options(str(empty)), backup.artifacts, to=remote, overwrite=True)
    assert refused.status == OutcomeStatus.FAILED and "deleting the current branch" in refused.reason
    assert for_each_ref(remote) == before  # the push is atomic: no ref was deleted

    git.Repo(remote).git.config("receive.denyDeleteCurrent", "false")  # the target's own policy rules
    [done] = harness.restore(GitExporter, options(str(empty)), backup.artifacts, to=remote, overwrite=True)
    assert done.status == OutcomeStatus.RESTORED, done.reason
    assert for_each_ref(remote) == ""


def test_remote_moving_between_ls_remote_and_clone_is_pinned(remote, tmp_path):
    advertised, _, _ = git_exporter._advertised(remote)
    git.Repo(remote).git.update_ref("-d", "refs/custom/x")
    git.Repo(remote).git.update_ref("refs/custom/new", advertised["refs/heads/main"])
    with git_exporter._bundle(remote, advertised) as bundle, open(tmp_path / "b.bundle", "wb") as out:
        out.write(bundle.read())
    heads = git.Git().bundle("list-heads", str(tmp_path / "b.bundle")).splitlines()
    listed = {name: sha for sha, name in (line.split(" ") for line in heads) if name != "HEAD"}
    assert listed == advertised


def test_several_repositories_need_name_in_target(harness, remote, tmp_path):
    opts = {"repositories": [{"name": "a", "url": remote}, {"name": "b", "url": remote}]}
    backup = harness.backup(GitExporter, opts, base_dir=str(tmp_path))
    outcomes = harness.restore(GitExporter, opts, backup.artifacts, to=str(tmp_path / "one.git"))
    assert {o.status for o in outcomes} == {OutcomeStatus.FAILED}
    assert all("{name}" in o.reason for o in outcomes)
    outcomes = harness.restore(GitExporter, opts, backup.artifacts, to=str(tmp_path / "many" / "{name}.git"))
    assert statuses(outcomes) == {"a": OutcomeStatus.RESTORED, "b": OutcomeStatus.RESTORED}
    outcomes = harness.restore(GitExporter, opts, backup.artifacts)
    assert all(o.status == OutcomeStatus.FAILED and "--to" in o.reason for o in outcomes)


def test_credentials_never_appear(harness, tmp_path):
    url = "https://deploy:s3cr3t-token@127.0.0.1:1/platform.git"
    backup = harness.backup(GitExporter, options(url), base_dir=str(tmp_path))
    assert backup.artifacts == []
    assert backup.findings and backup.findings[0]["severity"] == "error"
    assert "s3cr3t" not in repr(backup.findings) and "***@" in repr(backup.findings)

    context = ExportContext("src", GitExporter.Options(**options(url)), str(tmp_path))
    [found] = GitExporter(context).discover()
    assert found.detail.startswith("unreachable") and "s3cr3t" not in found.detail

    git.Repo.init(tmp_path / "e.git", bare=True)
    good = harness.backup(GitExporter, options(str(tmp_path / "e.git")), base_dir=str(tmp_path))
    outcomes = harness.restore(GitExporter, options(url), good.artifacts, to=url)
    assert outcomes[0].status == OutcomeStatus.FAILED and "s3cr3t" not in outcomes[0].reason
    assert redact("fatal: 'https://u:p@h/x' and http://tok@h2/y") == "fatal: 'https://***@h/x' and http://***@h2/y"


def test_discover_counts_refs(remote, tmp_path):
    context = ExportContext("src", GitExporter.Options(**options(remote)), str(tmp_path))
    [found] = GitExporter(context).discover()
    assert (found.kind, found.identity) == ("git-bundle", "platform")
    assert found.detail == f"{len(for_each_ref(remote).splitlines())} refs"


@pytest.mark.parametrize("bad", [
    {"repositories": []},
    {"repositories": [{"name": "a", "url": "x"}, {"name": "a", "url": "y"}]},
    {"repositories": [{"name": "../a", "url": "x"}]},
    {"repositories": [{"name": "a", "url": "--upload-pack=touch /tmp/pwned"}]},
    {"repositories": [{"name": "a", "url": "ext::sh -c touch% /tmp/pwned"}]},
    {"repositories": [{"name": "a", "url": "x", "branch": "main"}]},
])
def test_options_rejected(bad):
    with pytest.raises(ValidationError):
        GitExporter.Options(**bad)
