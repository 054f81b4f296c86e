"""The etcd exporter against etcd with TLS and client-certificate authentication, as a kubeadm
control plane runs it (certificates made here with `cryptography`)."""

from __future__ import annotations

import datetime
import ipaddress
import os

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from dr.exporters.etcd import EtcdExporter
from tests.servers import ServerProcess, free_port


def _pem(path, key, cert) -> None:
    with open(f"{path}.key", "wb") as handle:
        handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    with open(f"{path}.crt", "wb") as handle:
        handle.write(cert.public_bytes(serialization.Encoding.PEM))


def _certificate(name, issuer_name, issuer_key, usages, ca=False, key=None):
    key = key or ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
               .issuer_name(issuer_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    if ExtendedKeyUsageOID.SERVER_AUTH in (usages or []):
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                        critical=False)
    return key, builder.sign(issuer_key or key, hashes.SHA256())


def make_pki(folder: str) -> None:
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "etcd-ca")])
    _, ca = _certificate("etcd-ca", ca_name, ca_key, None, ca=True, key=ca_key)
    _pem(os.path.join(folder, "ca"), ca_key, ca)
    # etcd's JSON gateway dials etcd's own gRPC server with the serving certificate: like kubeadm's
    # etcd/server.crt, it must allow client authentication too when --client-cert-auth is on
    _pem(os.path.join(folder, "server"), *_certificate("etcd", ca_name, ca_key, [ExtendedKeyUsageOID.SERVER_AUTH,
                                                                                 ExtendedKeyUsageOID.CLIENT_AUTH]))
    _pem(os.path.join(folder, "apiserver-etcd-client"),
         *_certificate("kube-apiserver-etcd-client", ca_name, ca_key, [ExtendedKeyUsageOID.CLIENT_AUTH]))


def tls_etcd(folder: str) -> ServerProcess:
    """etcd serving clients over TLS only, demanding a client certificate signed by the CA."""
    metrics = free_port()

    def argv(port: int) -> list[str]:
        peer = f"http://127.0.0.1:{free_port()}"
        return ["etcd", "--data-dir", os.path.join(folder, "data"), "--name", "cp",
                "--listen-client-urls", f"https://127.0.0.1:{port}", "--advertise-client-urls",
                f"https://127.0.0.1:{port}", "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"cp={peer}", "--cert-file", os.path.join(folder, "server.crt"),
                "--key-file", os.path.join(folder, "server.key"), "--client-cert-auth",
                "--trusted-ca-file", os.path.join(folder, "ca.crt"),
                "--listen-metrics-urls", f"http://127.0.0.1:{metrics}"]
    return ServerProcess(argv, lambda port: f"http://127.0.0.1:{metrics}/health", name="etcd-tls")


def test_snapshot_over_tls_with_a_client_certificate(harness, tmp_path, age_keys):
    pki = tmp_path / "pki"
    pki.mkdir()
    make_pki(str(pki))
    with tls_etcd(str(pki)) as server:
        endpoint = f"https://127.0.0.1:{server.port}"
        cluster = {"name": "cp", "endpoints": [endpoint], "ca_file": "pki/ca.crt"}
        keyed = {**cluster, "cert_file": "pki/apiserver-etcd-client.crt", "key_file": "pki/apiserver-etcd-client.key"}
        done = harness.backup(EtcdExporter, {"clusters": [keyed]}, base_dir=str(tmp_path), recipients=[age_keys[0]],
                              identities=[age_keys[1]])
        (artifact,) = done.artifacts
        assert artifact.meta["endpoint"] == endpoint and artifact.meta["revision"] >= 1

        refused = harness.backup(EtcdExporter, {"clusters": [cluster], "timeout_seconds": 5},
                                 base_dir=str(tmp_path), recipients=[age_keys[0]])
        assert refused.artifacts == []
        (error,) = [f for f in refused.findings if f["severity"] == "error"]
        assert "cp" in error["message"]  # without the client certificate the server ends the handshake
