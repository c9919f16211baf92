"""A self-signed certificate for 127.0.0.1, made with openssl, for tests of TLS serving."""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["self_signed"]


def self_signed(directory: Path) -> tuple[Path, Path]:
    """(key, certificate) PEM files in ``directory``, valid for a day for IP 127.0.0.1."""
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return key, cert
