"""Every HTTPS client reaches a server behind a private CA (made here) through its ecosystem's settings.

Each real server (MLflow, OpenBao, a distribution registry, a chart repository, moto S3) is put behind
tests.harness.tls.TlsProxy, whose leaf certificate a PrivateCA signed. Without being told about
that CA, each client must refuse the server; told the way its ecosystem tells it
(MLFLOW_TRACKING_SERVER_CERT_PATH, VAULT_CACERT/VAULT_CAPATH, docker's certs.d or the source's
ca_file, helm's ca_file, AWS_CA_BUNDLE), it must get the real server's answer. The machine's
own REQUESTS_CA_BUNDLE (set here to the system bundle, as on CI) must not stand in the way.
MLflow is also reached through HTTPS_PROXY (tests.harness.tls.ConnectProxy), and past it with NO_PROXY.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from dr.exporters.helm.transport import ChartError, Transport
from dr.kits.oci.credentials import Credentials
from dr.kits.oci.errors import RegistryError
from dr.exporters.images.exporter import Connections
from dr.exporters.images.options import ImagesOptions
from dr.exporters.mlflow.requesting import Client, MlflowUnreachable
from dr.exporters.vault.connecting import VaultUnavailable, new_client, read_state
from dr.exporters.vault.options import VaultOptions
from dr.repository.stores.base import StoreError
from dr.repository.stores.s3 import S3Store
from tests.fixtures_s3 import s3_client
from tests.harness.registries import DistributionRegistry
from tests.harness.tls import ConnectProxy, PrivateCA, TlsProxy
from tests.helm.charts import ChartServer
from tests.openbao import OpenBao
from tests.servers import mlflow_server

SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR", "AWS_CA_BUNDLE",
                "MLFLOW_TRACKING_SERVER_CERT_PATH", "MLFLOW_TRACKING_CLIENT_CERT_PATH",
                "MLFLOW_TRACKING_INSECURE_TLS", "VAULT_CACERT", "VAULT_CAPATH", "VAULT_SKIP_VERIFY",
                *(f"{p}_PROXY" for p in ("HTTPS", "HTTP", "ALL", "NO")),
                *(f"{p}_proxy" for p in ("https", "http", "all", "no")))


@pytest.fixture(scope="module")
def ca(tmp_path_factory) -> PrivateCA:
    return PrivateCA(str(tmp_path_factory.mktemp("private-ca")))


@pytest.fixture(autouse=True)
def system_trust_only(monkeypatch):
    """Only the system bundle is trusted to begin with, through the generic variable; no proxy."""
    for name in CA_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", SYSTEM_BUNDLE)


# -- MLflow -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mlflow_tls(tmp_path_factory, ca):
    """MLflow behind TLS that also asks for a client certificate signed by the private CA."""
    with mlflow_server(str(tmp_path_factory.mktemp("mlflow-tls"))) as server, \
            TlsProxy(server.port, ca.leaf("mlflow"), client_ca=ca.ca_file) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def client_pem(ca, tmp_path_factory) -> str:
    """MLflow's client certificate setting names one file: the certificate and its key."""
    cert, key = ca.leaf("mlflow-client")
    path = tmp_path_factory.mktemp("client") / "client.pem"
    path.write_text(open(cert).read() + open(key).read())
    return str(path)


def _experiments(url: str) -> list[str]:
    answer = Client(url, retries=0).get("/experiments/search", max_results=10)
    return [e["name"] for e in answer.get("experiments", [])]


def test_mlflow_trusts_the_ca_mlflow_names(monkeypatch, ca, mlflow_tls, client_pem):
    monkeypatch.setenv("MLFLOW_TRACKING_CLIENT_CERT_PATH", client_pem)
    with pytest.raises(MlflowUnreachable, match="SSLError"):
        _experiments(mlflow_tls.url)
    monkeypatch.setenv("MLFLOW_TRACKING_SERVER_CERT_PATH", ca.ca_file)
    assert "Default" in _experiments(mlflow_tls.url)  # MLflow's own, from the real server


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_mlflow_client_certificate_and_insecure_tls(monkeypatch, ca, mlflow_tls, client_pem):
    monkeypatch.setenv("MLFLOW_TRACKING_SERVER_CERT_PATH", ca.ca_file)
    with pytest.raises(MlflowUnreachable):  # the server asks for a client certificate
        _experiments(mlflow_tls.url)
    monkeypatch.setenv("MLFLOW_TRACKING_CLIENT_CERT_PATH", client_pem)
    monkeypatch.delenv("MLFLOW_TRACKING_SERVER_CERT_PATH")
    monkeypatch.setenv("MLFLOW_TRACKING_INSECURE_TLS", "true")  # beats REQUESTS_CA_BUNDLE
    assert "Default" in _experiments(mlflow_tls.url)


def test_mlflow_goes_through_https_proxy_unless_no_proxy(monkeypatch, ca, mlflow_tls, client_pem):
    monkeypatch.setenv("MLFLOW_TRACKING_SERVER_CERT_PATH", ca.ca_file)
    monkeypatch.setenv("MLFLOW_TRACKING_CLIENT_CERT_PATH", client_pem)
    with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        assert "Default" in _experiments(mlflow_tls.url)
        assert proxy.tunnels == [f"127.0.0.1:{mlflow_tls.port}"]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert "Default" in _experiments(mlflow_tls.url)
        assert len(proxy.tunnels) == 1  # reached directly


# -- Vault / OpenBao ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def vault_tls(ca):
    with OpenBao("openbao-tls") as bao, TlsProxy(bao.server.port, ca.leaf("openbao")) as proxy:
        yield proxy


def _vault_state(url: str, **options):
    vault = VaultOptions(address=url, auth={"method": "token", "token_env": "VAULT_TOKEN"},
                         unseal={"type": "shamir", "custodians": ["a", "b"], "threshold": 2}, **options)
    return read_state(new_client(vault, "/"))


def test_vault_trusts_vault_cacert_then_vault_capath(monkeypatch, ca, vault_tls, tmp_path):
    with pytest.raises(VaultUnavailable, match="SSLError"):
        _vault_state(vault_tls.url)
    monkeypatch.setenv("VAULT_CACERT", ca.ca_file)
    state = _vault_state(vault_tls.url)
    assert state.initialized and not state.sealed and state.raft_index is not None
    monkeypatch.delenv("VAULT_CACERT")
    folder = tmp_path / "capath"  # a rehashed folder (<subject hash>.0 links), as VAULT_CAPATH expects
    folder.mkdir()
    shutil.copy(ca.ca_file, folder / "ca.pem")
    subprocess.run(["openssl", "rehash", str(folder)], check=True)
    monkeypatch.setenv("VAULT_CAPATH", str(folder))
    assert _vault_state(vault_tls.url).initialized


def test_vault_source_ca_cert_wins_over_the_environment(monkeypatch, ca, vault_tls, tmp_path):
    monkeypatch.setenv("VAULT_CACERT", SYSTEM_BUNDLE)
    assert _vault_state(vault_tls.url, ca_cert=ca.ca_file).initialized
    with pytest.raises(VaultUnavailable):
        _vault_state(vault_tls.url)


# -- an OCI registry ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def registry_tls(ca):
    registry = DistributionRegistry(name="registry-tls").start()
    try:
        with TlsProxy(registry.port, ca.leaf("registry")) as proxy:
            yield proxy
    finally:
        registry.stop()


def _registry(host: str, tmp_path, **options):
    o = ImagesOptions(to=[f"https://{host}"], certs_dir=str(tmp_path / "certs.d"), retries=0, **options)
    return Connections(o, Credentials(ecr=False), time.sleep, str(tmp_path)).get(host, "https")


def test_registry_trusts_docker_certs_d_or_the_source_ca_file(ca, registry_tls, tmp_path):
    host = f"127.0.0.1:{registry_tls.port}"
    with pytest.raises(RegistryError, match="SSLError|certificate"):
        _registry(host, tmp_path).check()
    shutil.copy(ca.ca_file, tmp_path / "ca.pem")
    _registry(host, tmp_path, ca_file="ca.pem").check()  # relative: the plan's folder
    os.makedirs(tmp_path / "certs.d" / host)
    shutil.copy(ca.ca_file, tmp_path / "certs.d" / host / "ca.crt")
    before = registry_tls.handshakes
    _registry(host, tmp_path).check()
    assert registry_tls.handshakes > before


# -- a helm chart repository --------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_helm_trusts_its_ca_file_and_tls_verify_false_beats_requests_ca_bundle(ca, tmp_path):
    (tmp_path / "index.yaml").write_text("apiVersion: v1\nentries: {}\n")
    server = ChartServer(tmp_path)
    port = int(server.url.rsplit(":", 1)[1])
    try:
        with TlsProxy(port, ca.leaf("charts")) as proxy:
            index = proxy.url + "/index.yaml"
            with pytest.raises(ChartError, match="SSLError"):
                Transport(5).request("GET", index)
            assert "entries" in Transport(5, ca_file=ca.ca_file).request("GET", index).text
            assert "entries" in Transport(5, verify_tls=False).request("GET", index).text
    finally:
        server.stop()


# -- S3 (moto) ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3_tls(ca, moto_endpoint):
    port = int(moto_endpoint.rsplit(":", 1)[1])
    with TlsProxy(port, ca.leaf("s3")) as proxy:
        yield proxy


@pytest.mark.parametrize("client", ["lean", "botocore"])
def test_s3_trusts_aws_ca_bundle(monkeypatch, aws_env, ca, moto_endpoint, s3_tls, client):
    bucket = f"private-ca-{client}"
    s3_client(moto_endpoint).create_bucket(Bucket=bucket)
    s3_client(moto_endpoint).put_object(Bucket=bucket, Key="k", Body=b"behind a private CA")
    if client == "botocore":
        monkeypatch.setenv("DR_S3_CLIENT", "botocore")
    monkeypatch.setenv("AWS_CA_BUNDLE", SYSTEM_BUNDLE)
    with pytest.raises(StoreError, match="SSL|certificate"):
        S3Store(bucket, endpoint_url=s3_tls.url).get("k")
    monkeypatch.setenv("AWS_CA_BUNDLE", ca.ca_file)
    assert S3Store(bucket, endpoint_url=s3_tls.url).get("k") == b"behind a private CA"
