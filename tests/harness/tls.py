"""A private CA made in the test, and a TLS-terminating proxy in front of a plain test server.

PrivateCA(folder) writes ca.pem (the CA alone: what a client is told to trust) and issues leaf
certificates for 127.0.0.1. TlsProxy(upstream_port, leaf) listens on 127.0.0.1 with that leaf
(asking for a client certificate when given client_ca) and forwards each connection's bytes to the plain server at upstream_port, so every client is
tested over real TLS against the real server behind it (moto, MLflow, OpenBao, a registry).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write(path: str, data: bytes) -> str:
    with open(path, "wb") as handle:
        handle.write(data)
    return path


class PrivateCA:
    """A CA (ca.pem) and leaves signed by it, for 127.0.0.1 and localhost."""

    def __init__(self, folder: str, name: str = "dr test CA") -> None:
        self.folder = folder
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.cert = self._builder(_name(name), self.key.public_key()).add_extension(
            x509.BasicConstraints(ca=True, path_length=0), critical=True).sign(self.key, hashes.SHA256())
        self.ca_file = _write(os.path.join(folder, "ca.pem"), self.cert.public_bytes(serialization.Encoding.PEM))

    def _builder(self, subject: x509.Name, public_key) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.timezone.utc)
        issuer = self.cert.subject if hasattr(self, "cert") else subject
        return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1)))

    def leaf(self, name: str = "server") -> tuple[str, str]:
        """(certificate file, key file) of a leaf for 127.0.0.1/localhost, signed by this CA."""
        key = ec.generate_private_key(ec.SECP256R1())
        sans = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                            x509.DNSName("localhost")])
        cert = self._builder(_name(name), key.public_key()).add_extension(sans, critical=False).add_extension(
            x509.BasicConstraints(ca=False, path_length=None), critical=True).sign(self.key, hashes.SHA256())
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        return (_write(os.path.join(self.folder, f"{name}.pem"), cert.public_bytes(serialization.Encoding.PEM)),
                _write(os.path.join(self.folder, f"{name}.key"), key_pem))


class _Listener:
    """A loopback listener handing each connection to self._handle in a thread of its own."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.listener.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TlsProxy(_Listener):
    """https://127.0.0.1:PORT, terminating TLS with `leaf` and relaying to 127.0.0.1:upstream_port."""

    def __init__(self, upstream_port: int, leaf: tuple[str, str], client_ca: str | None = None) -> None:
        self.upstream_port = upstream_port
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(*leaf)
        if client_ca:  # mutual TLS: a client certificate signed by client_ca is required
            self.context.verify_mode = ssl.CERT_REQUIRED
            self.context.load_verify_locations(cafile=client_ca)
        self.handshakes = 0  # connections whose TLS handshake succeeded (the client trusted the leaf)
        super().__init__()
        self.url = f"https://127.0.0.1:{self.port}"

    def _handle(self, client: socket.socket) -> None:
        try:
            tls = self.context.wrap_socket(client, server_side=True)
        except (ssl.SSLError, OSError):
            client.close()  # the client refused the certificate (or went away)
            return
        self.handshakes += 1
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        threading.Thread(target=_pump, args=(upstream, tls), daemon=True).start()
        _pump(tls, upstream)


class ConnectProxy(_Listener):
    """An HTTP proxy that only tunnels (CONNECT host:port), as HTTPS_PROXY names one; counts `tunnels`."""

    def __init__(self) -> None:
        self.tunnels: list[str] = []  # the host:port of each CONNECT
        super().__init__()
        self.url = f"http://127.0.0.1:{self.port}"

    def _handle(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
        verb, target = head.split(b" ", 2)[:2]
        if verb != b"CONNECT":
            client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        host, port = target.decode().rsplit(":", 1)
        self.tunnels.append(target.decode())
        upstream = socket.create_connection((host, int(port)))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()
        _pump(client, upstream)


def _pump(source: socket.socket, target: socket.socket) -> None:
    """Copy bytes one way until either side closes, then close both."""
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            try:
                sock.close()
            except OSError:
                pass
