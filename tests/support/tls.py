"""A self-signed certificate for 127.0.0.1 (or a host name), made with openssl, for tests of TLS
serving."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["self_signed"]


def self_signed(directory: Path, name: str = "") -> tuple[Path, Path]:
    """(key, certificate) PEM files in ``directory``, valid for a day for IP 127.0.0.1, or for
    the host ``name`` alone."""
    key, cert = directory / "key.pem", directory / "cert.pem"
    alt_name = f"DNS:{name}" if name else "IP:127.0.0.1"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", f"/CN={name or '127.0.0.1'}"),
            *("-addext", f"subjectAltName={alt_name}"),
        ],
        check=True,
        capture_output=True,
    )
    return key, cert
