"""A throwaway certificate authority for TLS tests, made with the openssl command line: a CA and
a server certificate it signs for ``localhost`` only (so connecting by IP address is a host-name
mismatch), both valid for a day."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    cert: Path
    key: Path


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_certificates(directory: Path, name: str = "localhost") -> TlsFiles:
    """A CA (``ca.pem``) and a server certificate for ``name`` it signed (``server.pem``, ``server.key``)."""
    d = directory
    _openssl("req", "-x509", *_EC, "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"), "-days", "1",
             "-subj", "/CN=duet test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    _openssl("req", *_EC, "-keyout", str(d / "server.key"), "-out", str(d / "server.csr"), "-subj", f"/CN={name}")
    (d / "server.ext").write_text(f"subjectAltName=DNS:{name}\nbasicConstraints=CA:FALSE\n"
                                  "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", str(d / "server.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
             "-CAcreateserial", "-out", str(d / "server.pem"), "-days", "1", "-extfile", str(d / "server.ext"))
    return TlsFiles(d / "ca.pem", d / "server.pem", d / "server.key")
