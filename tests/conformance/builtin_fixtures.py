"""ConformanceFixtures for the built-in exporters (dr.testing.exporter_fixtures).

git:         two real bare remotes (branches, tags, a note); restores go to new bare repositories.
files:       a small tree (files, a subdirectory, an empty one, a symlink) restored into a directory.
kubernetes:  the real-world emulated cluster of tests/kubernetes (upstream CRDs and examples);
             each destination is a new, empty emulated cluster.
checkpoints: real PyTorch DCP saves (two runs) with a directory DR copy; restores go to a directory.
images:     three real distribution registries (source, DR, destinations); two images sharing a layer.
vault:       a real OpenBao raft server (KV v2, a policy, an AppRole, PKI); each destination is a
             new raft server, initialised and unsealed with its own keys.
secretsmanager: moto's Secrets Manager over HTTP (its own server): three secrets, values included;
             each destination is another region of it.
mlflow:      a real MLflow server holding tests/mlflow/registries.py's registry (a deleted version,
             aliases, stages, runs with lineage); each destination is a new, empty MLflow server.
helm:        an HTTP chart repository (two charts, one with a .prov); restores go to directory
             chart repositories (tests/conformance/helm_fixture.py).
certificates: moto's ACM over HTTP: two private-CA certificates with their keys and an imported one;
             each destination is another region (tests/conformance/certificates_fixture.py).
tables:      the third-party test exporter (tests/plugins/acme_tables): two JSON tables.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Hashable, Iterable

from dr.exporters.checkpoints import CheckpointsExporter
from dr.exporters.files import FilesExporter
from dr.exporters.git import GitExporter
from dr.exporters.images import ImagesExporter
from dr.exporters.kubernetes import KubernetesExporter
from dr.exporters.kubernetes.batches import KIND as OBJECTS
from dr.exporters.kubernetes.resources import ResourceType, item_name
from dr.exporters.kubernetes.selecting import NEVER
from dr.exporters.secretsmanager import SecretsManagerExporter
from dr.exporters.vault import VaultExporter
from dr.exporters.vault.restoring import TOKEN_KEY, UNSEAL_KEY
from dr.exporters.mlflow import MODEL as MLFLOW_MODEL
from dr.exporters.mlflow import MlflowExporter
from dr.testing import ConformanceFixture
from tests.harness.registries import DistributionRegistry, push_image, tar_layer
from tests.mlflow.registries import Rest, build_registry, registry_fingerprint
from tests.plugins.acme_tables import TablesExporter
from tests.servers import free_port, mlflow_server

_GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
            "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid", "LC_ALL": "C"}


def tree_fingerprint(root: str, *, times: bool) -> Hashable:
    """Every entry under root: path, type, mode, content digest or link target (and mtime)."""
    if not os.path.isdir(root):
        return None
    entries = []
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = os.path.join(folder, name)
            st = os.lstat(path)
            if os.path.islink(path):
                what = "link:" + os.readlink(path)
            elif os.path.isdir(path):
                what = "dir"
            else:
                with open(path, "rb") as handle:
                    what = hashlib.file_digest(handle, "sha256").hexdigest()
            entries.append((os.path.relpath(path, root), what, st.st_mode, st.st_mtime_ns if times else 0))
    return tuple(sorted(entries))


class _Destinations:
    """Numbered, new destination directories under the fixture's workdir."""

    workdir = ""
    made = 0

    def new_directory(self) -> str:
        self.made += 1
        return os.path.join(os.path.dirname(self.workdir), f"destination-{self.made}")


# -- git ------------------------------------------------------------------------------------------------
def git(*args: str, cwd: str | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=_GIT_ENV, check=True, capture_output=True,
                          text=True).stdout


class GitFixture(_Destinations, ConformanceFixture):
    exporter = GitExporter
    names = ("platform", "tools")

    def build_source(self, workdir: str) -> None:
        self.workdir = workdir
        for name in self.names:
            work = os.path.join(workdir, "work", name)
            git("init", "--quiet", "--initial-branch=main", work)
            for n in (1, 2):
                Path(work, "deploy.yaml").write_text(f"name: {name}\nreplicas: {n}\n")
                git("add", "deploy.yaml", cwd=work)
                git("commit", "--quiet", "-m", f"change {n}", cwd=work)
            git("tag", "-a", "v1", "-m", "release 1", cwd=work)
            git("notes", "add", "-m", "reviewed", "HEAD~1", cwd=work)
            git("branch", "feature", "HEAD~1", cwd=work)
            git("init", "--quiet", "--bare", "--initial-branch=main", self._remote(name))
            git("push", "--quiet", "--mirror", self._remote(name), cwd=work)

    def _remote(self, name: str) -> str:
        return os.path.join(self.workdir, "remotes", f"{name}.git")

    def source_options(self) -> dict[str, Any]:
        return {"repositories": [{"name": n, "url": self._remote(n)} for n in self.names]}

    def broken_options(self) -> dict[str, Any]:
        return {"repositories": [{"name": "gone", "url": self._remote("gone")}]}

    def destination(self) -> str:
        return os.path.join(self.new_directory(), "{name}.git")

    def fingerprint(self, to: str) -> Hashable:
        refs = []
        for name in self.names:
            path = to.replace("{name}", name)
            if os.path.isdir(path):
                refs.append((name, git("for-each-ref", "--format=%(objectname) %(refname)", cwd=path),
                             git("symbolic-ref", "HEAD", cwd=path)))
        return tuple(refs)

    def perturb(self, to: str) -> str:
        path = to.replace("{name}", "platform")
        git("update-ref", "refs/heads/main", "refs/heads/feature", cwd=path)
        return "platform"

    def source_fingerprint(self) -> Hashable:
        return self.fingerprint(self._remote("{name}"))

    def change_source(self) -> str:
        work = os.path.join(self.workdir, "work", "platform")
        Path(work, "deploy.yaml").write_text("name: platform\nreplicas: 3\n")
        git("commit", "--quiet", "-am", "change 3", cwd=work)
        git("push", "--quiet", self._remote("platform"), "main", cwd=work)
        return "platform"


# -- files ----------------------------------------------------------------------------------------------
class FilesFixture(_Destinations, ConformanceFixture):
    exporter = FilesExporter

    def build_source(self, workdir: str) -> None:
        self.workdir = workdir
        tree = Path(workdir, "tree")
        (tree / "conf" / "empty").mkdir(parents=True)
        (tree / "a.txt").write_text("alpha\n")
        (tree / "conf" / "app.yaml").write_text("replicas: 2\n")
        (tree / "conf" / "key.pem").write_bytes(os.urandom(300))
        (tree / "conf" / "key.pem").chmod(0o600)
        (tree / "current").symlink_to("conf/app.yaml")

    def source_options(self) -> dict[str, Any]:
        return {"paths": [os.path.join(self.workdir, "tree")]}

    def broken_options(self) -> dict[str, Any]:
        return {"paths": [os.path.join(self.workdir, "missing")]}

    def destination(self) -> str:
        return self.new_directory()

    def fingerprint(self, to: str) -> Hashable:
        return tree_fingerprint(to, times=True)

    def perturb(self, to: str) -> str:
        Path(to, "tree", "a.txt").write_text("changed at the destination\n")
        return "tree/a.txt"

    def source_fingerprint(self) -> Hashable:
        return self.fingerprint(self.workdir)  # identities are paths under the root's folder: tree/...

    def change_source(self) -> str:
        Path(self.workdir, "tree", "conf", "app.yaml").write_text("replicas: 3\n")
        return "tree/conf/app.yaml"


# -- kubernetes -----------------------------------------------------------------------------------------
#: metadata a server stamps on every write (or on create): not what a restore restores
_STAMPS = ("resourceVersion", "managedFields", "generation", "uid", "creationTimestamp")


def cluster_fingerprint(cluster, leave_out: Iterable[tuple[str, str]] = ()) -> Hashable:
    """Every stored object but those of the `leave_out` resources (group, plural), without the
    fields the server stamps on each write."""
    leave_out = set(leave_out)

    def read(em) -> tuple:
        return tuple(sorted((json.dumps([list(key), list(where)]), json.dumps(_unstamped(key, obj), sort_keys=True,
                                                                               default=str))
                            for key, stored in em.store.items() if tuple(key)[:2] not in leave_out
                            for where, obj in stored.items()))
    return cluster.call(read)


def _unstamped(key, obj: dict) -> dict:
    """`obj` without what its server assigns: the stamps, owners' uids (a restore points them at
    the new owners) and a CRD's status (its Established conditions, set as it is created)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _STAMPS}
    if "ownerReferences" in meta:
        meta["ownerReferences"] = [{k: v for k, v in o.items() if k != "uid"} for o in meta["ownerReferences"]]
    crd = tuple(key)[:2] == ("apiextensions.k8s.io", "customresourcedefinitions")
    return {**{k: v for k, v in obj.items() if not (crd and k == "status")}, "metadata": meta}


class KubernetesFixture(ConformanceFixture):
    exporter = KubernetesExporter

    def __init__(self) -> None:
        self.clusters: dict[str, Any] = {}

    def build_source(self, workdir: str) -> None:
        from tests.harness import EmulatedCluster, write_kubeconfig
        from tests.kubernetes.upstream import populate

        self.workdir = workdir
        source = self.clusters["source"] = EmulatedCluster(name="source").start()
        populate(source)
        self.kubeconfig = write_kubeconfig(os.path.join(workdir, "kubeconfig"), {"source": source})
        self.unreachable = os.path.join(workdir, "kubeconfig-unreachable")
        Path(self.unreachable).write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "gone",
            "clusters": [{"name": "gone", "cluster": {"server": "http://127.0.0.1:9"}}],  # discard port: refused
            "users": [{"name": "gone", "user": {"token": "t"}}],
            "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "gone"}}]}))

    def source_options(self) -> dict[str, Any]:
        from tests.kubernetes.conftest import WORKLOAD_KINDS

        return {"kubeconfig": self.kubeconfig, "context": "source", "workload_kinds": WORKLOAD_KINDS,
                "list_timeout_seconds": 10}

    def broken_options(self) -> dict[str, Any]:
        return {"kubeconfig": self.unreachable, "retries": 1, "request_timeout_seconds": 2}

    def destination(self) -> str:
        from tests.harness import EmulatedCluster, write_kubeconfig

        name = f"dest-{len(self.clusters)}"
        cluster = self.clusters[name] = EmulatedCluster(name=name).start()
        return write_kubeconfig(os.path.join(self.workdir, f"kubeconfig-{name}"), {name: cluster}) + f":{name}"

    def _cluster(self, to: str):
        return self.clusters[to.rsplit(":", 1)[1]]

    def fingerprint(self, to: str) -> Hashable:
        return cluster_fingerprint(self._cluster(to))

    def perturb(self, to: str) -> str:
        import kubernetes

        api = kubernetes.client.CoreV1Api(self._cluster(to).api_client())
        api.patch_namespaced_config_map("settings", "team-a", {"data": {"changed": "at the destination"}})
        return "configmaps/team-a/settings"

    def source_fingerprint(self) -> Hashable:
        """The source's objects but the runtime state the exporter never backs up (NEVER)."""
        return cluster_fingerprint(self.clusters["source"], leave_out=NEVER)

    def change_source(self) -> str:
        import kubernetes

        api = kubernetes.client.CoreV1Api(self.clusters["source"].api_client())
        api.patch_namespaced_config_map("settings", "team-a", {"data": {"replicas": "5"}})
        return "configmaps/team-a"

    def expected_items(self, artifacts, reader) -> set[str]:
        """One item per object (kubernetes-objects artifacts hold one JSON object a line);
        Helm release views are reported as helm-release/<identity> (skipped by design)."""
        items = set()
        for artifact in artifacts:
            if artifact.kind != OBJECTS:
                items.add(f"helm-release/{artifact.identity}")
                continue
            rtype = ResourceType.from_meta(artifact.meta)
            items |= {item_name(rtype, json.loads(line)) for line in reader.read(artifact).splitlines() if line}
        return items

    def close(self) -> None:
        errors = []
        for name, cluster in self.clusters.items():
            errors += [f"{name}: {e}" for e in cluster.errors]
            cluster.stop()
        assert errors == [], "the emulator hit internal errors:\n" + "\n".join(errors)


# -- checkpoints ----------------------------------------------------------------------------------------
class CheckpointsFixture(_Destinations, ConformanceFixture):
    exporter = CheckpointsExporter
    runs = {"llama": [100, 200], "gpt": [300]}

    def build_source(self, workdir: str) -> None:
        from tests.checkpoints.conftest import age_files
        from tests.checkpoints.test_exporter_helpers import save_steps

        self.workdir = workdir
        root = Path(workdir, "runs")
        for run, steps in self.runs.items():
            save_steps(root, run, steps)
        age_files(root, 3600)  # saved an hour ago: settled

    def _options(self, root: str) -> dict[str, Any]:
        return {"roots": [root], "dr_copy": os.path.join(self.workdir, "dr-copy"), "settle_seconds": 0}

    def source_options(self) -> dict[str, Any]:
        return self._options(os.path.join(self.workdir, "runs"))

    def broken_options(self) -> dict[str, Any]:
        return self._options(os.path.join(self.workdir, "missing"))

    def destination(self) -> str:
        return self.new_directory()

    def fingerprint(self, to: str) -> Hashable:
        return tree_fingerprint(to, times=False)

    def perturb(self, to: str) -> str:
        data = Path(to, "llama", "step-200", "__0_0.distcp")
        raw = bytearray(data.read_bytes())
        raw[100] ^= 0xFF
        data.write_bytes(bytes(raw))
        return next(item for item in self.items if item.endswith("llama/step-200"))

    def source_fingerprint(self) -> Hashable:
        """The latest step of each run, as restore's default lays it out (<run>/step-N)."""
        root = os.path.join(self.workdir, "runs")
        latest = {run: f"{run}/step-{max(steps)}" for run, steps in self.runs.items()}
        return tuple(e for e in tree_fingerprint(root, times=False)
                     if e[0] in latest or e[0].startswith(tuple(f"{path}/" for path in latest.values()))
                     or e[0] in latest.values())

    def change_source(self) -> str:
        """A new save of run gpt: the latest step, so the next restore takes it."""
        from tests.checkpoints.conftest import age_files
        from tests.checkpoints.test_exporter_helpers import save_steps

        self.runs = {**self.runs, "gpt": [*self.runs["gpt"], 400]}
        save_steps(Path(self.workdir, "runs"), "gpt", [400])
        age_files(Path(self.workdir, "runs", "gpt", "step-400"), 3600)
        return "near/gpt/step-400"  # the tier's name, then the run's save

    def expected_items(self, artifacts, reader) -> set[str]:
        """Restore's default: the latest step of every run (docs: RestoreRequest.remap `step`)."""
        latest: dict[str, Any] = {}
        for artifact in artifacts:
            run, step = artifact.meta["run"], int(artifact.meta["step"])
            if run not in latest or step > int(latest[run].meta["step"]):
                latest[run] = artifact
        self.items = {artifact.identity for artifact in latest.values()}
        return self.items


# -- vault ----------------------------------------------------------------------------------------------
class VaultFixture(ConformanceFixture):
    """A Vault restores as a whole (one raft snapshot), so "one item differs" is one KV secret
    written anew at the destination: the snapshot item is then a conflict, and the configuration
    record (mounts, policies, auth, PKI) stays unchanged. Every destination is a fresh raft server
    that accepts one shared target token; the restores unseal with the source's shares."""

    exporter = VaultExporter
    target_token = "dr-conformance-target"

    def __init__(self) -> None:
        self.servers: dict[str, Any] = {}

    def build_source(self, workdir: str) -> None:
        from tests.openbao import populate

        self.workdir = workdir
        self.source = self._start("source")
        populate(self.source)
        Path(workdir, "vault-token").write_text(self.source.root_token)
        Path(workdir, "target-token").write_text(self.target_token)
        Path(workdir, "unseal-keys").write_text("\n".join(self.source.unseal_keys))

    def _start(self, name: str):
        from tests.openbao import OpenBao

        bao = OpenBao(f"openbao-{name}").start()
        self.servers[bao.address] = bao
        return bao

    def _options(self, address: str) -> dict[str, Any]:
        # versions: "one item differs" is a secret written anew at the destination, which only a
        # record of the KV versions tells apart (the default records paths: docs/exporters.md)
        return {"address": address, "auth": {"method": "token", "token_file": "vault-token"},
                "unseal": {"type": "shamir", "custodians": ["alice", "bob", "carol"], "threshold": 2},
                "kv_metadata": "versions"}

    def source_options(self) -> dict[str, Any]:
        return self._options(self.source.address)

    def broken_options(self) -> dict[str, Any]:
        return self._options("http://127.0.0.1:9")  # the discard port: refused

    def destination(self) -> str:
        bao = self._start(f"destination-{len(self.servers)}")
        bao.client().auth.token.create(id=self.target_token, policies=["root"])
        return bao.address

    def remap(self) -> dict[str, str]:
        return {TOKEN_KEY: os.path.join(self.workdir, "target-token"),
                UNSEAL_KEY: os.path.join(self.workdir, "unseal-keys")}

    def fingerprint(self, to: str) -> Hashable:
        from tests.openbao import read_kv

        bao = self.servers[to]
        if bao.client("").sys.read_seal_status()["sealed"]:
            return ("sealed",)
        token = next(t for t in (self.source.root_token, bao.root_token) if bao.client(t).is_authenticated())
        client = bao.client(token)
        mounts = sorted((p, m["type"]) for p, m in client.sys.list_mounted_secrets_engines()["data"].items())
        policies = {p: client.sys.read_policy(p)["data"]["rules"] for p in client.sys.list_policies()["data"]["keys"]}
        kv = json.dumps(read_kv(bao, token), sort_keys=True) if ("secret/", "kv") in mounts else ""
        return (token == self.source.root_token, tuple(mounts), json.dumps(policies, sort_keys=True), kv)

    def perturb(self, to: str) -> str:
        self.servers[to].client(self.source.root_token).secrets.kv.v2.create_or_update_secret(
            "apps/billing/api", secret={"token": "changed at the destination"}, mount_point="secret")
        return "raft-snapshot"

    def source_fingerprint(self) -> Hashable:
        return self.fingerprint(self.source.address)

    def change_source(self) -> str:
        self.source.client(self.source.root_token).secrets.kv.v2.create_or_update_secret(
            "apps/billing/api", secret={"token": "rotated at the source"}, mount_point="secret")
        return "raft-snapshot"

    def close(self) -> None:
        for bao in self.servers.values():
            bao.stop()


# -- AWS exporters: a moto server of their own, each destination another region -------------------------
class MotoFixture(ConformanceFixture):
    regions = ["us-west-2", "eu-central-1", "ap-southeast-1", "ap-northeast-1", "ca-central-1", "eu-north-1",
               "sa-east-1", "ap-south-1"]
    _env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_EC2_METADATA_DISABLED": "true"}

    def __init__(self) -> None:
        self.server = None
        self.saved = {name: os.environ.get(name) for name in self._env}
        self.regions = list(type(self).regions)

    def start_moto(self) -> None:
        from tests.servers import moto_server

        os.environ.update(self._env)  # moto takes any credentials; close() puts the old ones back
        self.server = moto_server().start()
        self.endpoint = f"http://127.0.0.1:{self.server.port}"

    def destination(self) -> str:
        return self.regions.pop(0)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# -- secretsmanager -------------------------------------------------------------------------------------
class SecretsManagerFixture(MotoFixture):
    """Values included (secret-class), so the values restore; the metadata records say skipped."""

    exporter = SecretsManagerExporter

    def build_source(self, workdir: str) -> None:
        self.start_moto()
        sm = self._client("us-east-1")
        sm.create_secret(Name="apps/db", SecretString='{"password": "p1"}', Description="database",
                         Tags=[{"Key": "team", "Value": "a"}], AddReplicaRegions=[{"Region": "eu-west-1"}])
        sm.create_secret(Name="apps/tls-key", SecretBinary=b"\x00key\xff")
        sm.create_secret(Name="apps/api", SecretString="token-1")

    def _client(self, region: str):
        import boto3

        return boto3.client("secretsmanager", region_name=region, endpoint_url=self.endpoint)

    def source_options(self) -> dict[str, Any]:
        return {"region": "us-east-1", "endpoint_url": self.endpoint, "include_values": True}

    def broken_options(self) -> dict[str, Any]:
        return {"region": "us-east-1", "endpoint_url": "http://127.0.0.1:9", "timeout_seconds": 2}

    def fingerprint(self, to: str) -> Hashable:
        sm = self._client(to)
        found = []
        for entry in sm.list_secrets()["SecretList"]:
            value = sm.get_secret_value(SecretId=entry["Name"])
            found.append((entry["Name"], entry.get("Description", ""), json.dumps(entry.get("Tags", [])),
                          value.get("SecretString"), value.get("SecretBinary")))
        return tuple(sorted(found))

    def perturb(self, to: str) -> str:
        self._client(to).put_secret_value(SecretId="apps/api", SecretString="changed at the destination")
        return "apps/api:value"

    def source_fingerprint(self) -> Hashable:
        return self.fingerprint("us-east-1")

    def change_source(self) -> str:
        self._client("us-east-1").put_secret_value(SecretId="apps/db", SecretString='{"password": "p2"}')
        return "apps/db:value"


# -- tables: the third-party test exporter (tests/plugins/acme_tables, not installed) ---------------
class TablesFixture(_Destinations, ConformanceFixture):
    exporter = TablesExporter

    def build_source(self, workdir: str) -> None:
        self.workdir = workdir
        Path(workdir, "tables").mkdir()
        for name, rows in [("users", 3), ("items", 7)]:
            Path(workdir, "tables", f"{name}.json").write_text(json.dumps({"endpoint": "https://fs.example/api",
                                                                            "rows": rows}, sort_keys=True))

    def source_options(self) -> dict[str, Any]:
        return {"folder": "tables", "endpoint": "https://fs.example/api"}

    def broken_options(self) -> dict[str, Any]:
        return {"folder": "missing", "endpoint": "https://fs.example/api"}

    def destination(self) -> str:
        return self.new_directory()

    def fingerprint(self, to: str) -> Hashable:
        return tree_fingerprint(to, times=False)

    def perturb(self, to: str) -> str:
        Path(to, "users.json").write_text('{"rows": 0}')
        return "users.json"

    def source_fingerprint(self) -> Hashable:
        return self.fingerprint(os.path.join(self.workdir, "tables"))

    def change_source(self) -> str:
        Path(self.workdir, "tables", "items.json").write_text(json.dumps({"endpoint": "https://fs.example/api",
                                                                          "rows": 8}, sort_keys=True))
        return "items.json"


# -- images ---------------------------------------------------------------------------------------------
class ImagesFixture(ConformanceFixture):
    """Three real distribution registries: the source, the DR registry, and one whose repository
    prefixes are the restores' destinations."""

    exporter = ImagesExporter

    def __init__(self) -> None:
        self.servers: list[DistributionRegistry] = []
        self.made = 0

    def build_source(self, workdir: str) -> None:
        for name in ("source", "dr", "dest"):
            self.servers.append(DistributionRegistry(name=f"conformance-{name}").start())
        self.source, self.dr, self.dest = self.servers
        client = self.source.client()
        base = tar_layer({"base": os.urandom(20_000)})
        for name in ("api", "worker"):
            push_image(client, f"team/{name}", "1.0", [base, tar_layer({name: os.urandom(5_000)})])

    def source_options(self) -> dict[str, Any]:
        return {"to": [f"{self.dr.url}/mirror"], "retry_wait_seconds": 0.01,
                "images": [f"{self.source.host}/team/api:1.0", f"{self.source.host}/team/worker:1.0"]}

    def broken_options(self) -> dict[str, Any]:
        from tests.servers import free_port
        return {"to": [self.dr.url], "retries": 0, "images": [f"127.0.0.1:{free_port()}/team/gone:1"]}

    def destination(self) -> str:
        self.made += 1
        return f"{self.dest.url}/restored-{self.made}"

    def fingerprint(self, to: str) -> Hashable:
        """Every tag's manifest digest, by repository path under the destination's prefix."""
        return _registry_fingerprint(self.dest.client(), to.split("/", 3)[3] + "/")

    def source_fingerprint(self) -> Hashable:
        return _registry_fingerprint(self.source.client(), "team/", keep_prefix=True)

    def change_source(self) -> str:
        push_image(self.source.client(), "team/worker", "1.0", [tar_layer({"worker": os.urandom(5_000)})])
        return f"{self.source.host}/team/worker:1.0"

    def perturb(self, to: str) -> str:
        prefix = to.split("/", 3)[3]
        push_image(self.dest.client(), f"{prefix}/team/api", "1.0", [b"a different build"])
        return f"{self.source.host}/team/api:1.0"

    def close(self) -> None:
        for server in self.servers:
            server.stop()


def _registry_fingerprint(client, prefix: str, keep_prefix: bool = False) -> Hashable:
    found = []
    for path in client.catalog():
        if path.startswith(prefix):
            name = path if keep_prefix else path[len(prefix):]
            found += [(name, tag, client.head_manifest(path, tag)[0]) for tag in client.tags(path)]
    return tuple(sorted(found))


# -- mlflow: real MLflow servers (tests/servers.py) -----------------------------------------------------
class MlflowFixture(ConformanceFixture):
    exporter = MlflowExporter

    def __init__(self) -> None:
        self.servers: list = []
        self.destinations: dict[str, Any] = {}

    def _start(self, folder: str) -> str:
        server = mlflow_server(folder).start()
        self.servers.append(server)
        return f"http://127.0.0.1:{server.port}"

    def build_source(self, workdir: str) -> None:
        self.workdir = workdir
        self.url = self._start(os.path.join(workdir, "mlflow-source"))
        build_registry(self.url, "weights-bucket")

    def source_options(self) -> dict[str, Any]:
        return {"tracking_uri": self.url}

    def broken_options(self) -> dict[str, Any]:
        return {"tracking_uri": f"http://127.0.0.1:{free_port()}", "timeout_seconds": 2}  # nobody listens

    def destination(self) -> str:
        for server in self.servers[1:]:
            server.stop()  # each check restores into its own destination only: keep one running
        del self.servers[1:]
        return self._start(os.path.join(self.workdir, f"mlflow-destination-{len(self.destinations)}-{free_port()}"))

    def fingerprint(self, to: str) -> Hashable:
        return registry_fingerprint(to)

    def perturb(self, to: str) -> str:
        Rest(to).patch("/model-versions/update", {"name": "fraud-detector", "version": "3",
                                                  "description": "changed at the destination"})
        return "fraud-detector/v3"

    def source_fingerprint(self) -> Hashable:
        return registry_fingerprint(self.url)

    def change_source(self) -> str:
        Rest(self.url).patch("/registered-models/update", {"name": "ranker", "description": "changed at the source"})
        return "ranker"

    def expected_items(self, artifacts, reader) -> set[str]:
        items = set()
        for a in artifacts:
            items.add(a.identity)
            if a.kind == MLFLOW_MODEL:
                items |= {f"{a.identity}/v{n}" for n in a.meta["versions"]}
        return items

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        self.servers.clear()


FIXTURES = {"git": GitFixture, "files": FilesFixture, "kubernetes": KubernetesFixture,
            "checkpoints": CheckpointsFixture, "tables": TablesFixture, "images": ImagesFixture,
            "vault": VaultFixture, "secretsmanager": SecretsManagerFixture,
            "mlflow": MlflowFixture}

# -- exporters whose fixtures live in their own modules ----------------------------------------------
from tests.conformance.dns_fixture import DnsFixture  # noqa: E402  (after FIXTURES: no cycle)
from tests.conformance.etcd_fixture import EtcdFixture  # noqa: E402
from tests.conformance.certificates_fixture import CertificatesFixture  # noqa: E402
from tests.conformance.helm_fixture import HelmFixture  # noqa: E402
from tests.conformance.volumes_fixture import VolumesFixture  # noqa: E402

FIXTURES.update({"etcd": EtcdFixture, "dns": DnsFixture, "helm": HelmFixture, "certificates": CertificatesFixture,
                 "volumes": VolumesFixture})
