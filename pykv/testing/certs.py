"""Throw-away TLS material for tests: a CA, a server and a client certificate it signs.

Made with the ``openssl`` command-line tool (on Debian: the ``openssl`` package), so no key
material ever lives in a repository and no Python crypto package is needed. The server
certificate is for ``localhost`` and ``127.0.0.1``/``::1``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class TestCerts:
    """Paths of the generated files (PEM)."""

    __test__ = False  # not a pytest test class

    dir: str
    ca_cert: str
    ca_key: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key: str


def _openssl(*args: str, cwd: str) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {proc.stderr.decode(errors='replace')}")


def make_certs(directory: str, ca_name: str = "pykv test CA") -> TestCerts:
    """Write a new CA and a server and client certificate signed by it into ``directory``."""
    if shutil.which("openssl") is None:
        raise RuntimeError("TLS test certificates need the openssl command "
                           "(apt-get install openssl)")
    os.makedirs(directory, exist_ok=True)
    run = lambda *a: _openssl(*a, cwd=directory)  # noqa: E731
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "2", "-subj", f"/CN={ca_name}")
    with open(os.path.join(directory, "server.ext"), "w") as fh:
        fh.write("subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\n"
                 "extendedKeyUsage=serverAuth\n")
    with open(os.path.join(directory, "client.ext"), "w") as fh:
        fh.write("extendedKeyUsage=clientAuth\n")
    for name in ("server", "client"):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
            "-out", f"{name}.csr", "-subj", f"/CN={'localhost' if name == 'server' else name}")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.crt", "-days", "2",
            "-extfile", f"{name}.ext")
    path = lambda name: os.path.join(directory, name)  # noqa: E731
    return TestCerts(directory, path("ca.crt"), path("ca.key"), path("server.crt"),
                     path("server.key"), path("client.crt"), path("client.key"))
