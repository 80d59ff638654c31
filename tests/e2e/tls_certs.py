"""Certificates for the TLS tests, made with the openssl command line: a
private CA, a server certificate for 127.0.0.1/localhost, a client
certificate, and a second CA that signed none of them."""

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Certificates:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path  # trusts nothing the tests present
    other_client_cert: Path  # signed by other_ca
    other_client_key: Path


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _make_ca(folder: Path, name: str):
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj",
             f"/CN=funclatency test {name}", cwd=folder)


def _make_leaf(folder: Path, ca: str, name: str, extensions: str):
    (folder / f"{name}.ext").write_text(extensions)
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
             f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=folder)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext",
             cwd=folder)


def make_server_certificate(folder: Path, name: str):
    """Another server certificate and key for 127.0.0.1, signed by the CA of
    make_certificates(folder): (certificate, key)."""
    _make_leaf(folder, "ca", name,
               "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    return folder / f"{name}.pem", folder / f"{name}.key"


def make_certificates(folder: Path) -> Certificates:
    folder.mkdir(parents=True, exist_ok=True)
    _make_ca(folder, "ca")
    _make_ca(folder, "other-ca")
    _make_leaf(folder, "ca", "server",
               "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    _make_leaf(folder, "ca", "client",
               "subjectAltName=DNS:scraper.test\nextendedKeyUsage=clientAuth\n")
    _make_leaf(folder, "other-ca", "other-client", "extendedKeyUsage=clientAuth\n")
    return Certificates(folder / "ca.pem", folder / "server.pem", folder / "server.key",
                        folder / "client.pem", folder / "client.key", folder / "other-ca.pem",
                        folder / "other-client.pem", folder / "other-client.key")


def make_ca_and_server_certificate(folder: Path, dns_name: str):
    """A CA of its own and a server certificate it signed for `dns_name`
    (the one name a scraper verifies): (ca, certificate, key)."""
    folder.mkdir(parents=True, exist_ok=True)
    _make_ca(folder, "ca")
    _make_leaf(folder, "ca", "server",
               f"subjectAltName=DNS:{dns_name}\nextendedKeyUsage=serverAuth\n")
    return folder / "ca.pem", folder / "server.pem", folder / "server.key"
