"""The certificate `/metrics` is served with: from files, or self-signed at start.

controller-runtime's secure metrics serving does the same: a certificate
directory (a Secret mount, typically cert-manager's `tls.crt` / `tls.key`)
when one is given, else a self-signed certificate generated in memory, so
the default is encrypted without any set-up.  Python's `ssl` loads keys
only from files, so a generated pair is written into a private (0700)
directory under the work directory, loaded, and deleted at once: the key
never stays on disk.

Certificates in a directory are rotated under a running daemon (cert-manager
renews them; the kubelet swaps the Secret's files atomically), so
`ServingCert.context()` looks at the files again at most every
`RELOAD_SECONDS` and builds a new context when they changed; a pair that
does not load (caught mid-rotation) keeps the previous one, logged once.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import shutil
import socket
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"
RELOAD_SECONDS = 10.0
SELF_SIGNED_DAYS = 365
log = logging.getLogger("intentc.daemon")


class CertError(Exception):
    """A certificate directory that cannot serve (missing or unreadable files)."""


def self_signed(hosts: tuple[str, ...]) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM): ECDSA P-256, valid a year, for `hosts` (names or IPs).
    A scraper cannot verify it against a CA; it still encrypts, and the daemon
    generates a new one on every start."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))      # a scraper's clock a little behind
            .not_valid_after(now + datetime.timedelta(days=SELF_SIGNED_DAYS))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def default_hosts() -> tuple[str, ...]:
    """Names a scraper may use for this pod: its hostname, and loopback for local use."""
    return tuple(dict.fromkeys((socket.gethostname() or "intentc-daemon", "localhost", "127.0.0.1", "::1")))


def _server_context() -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def context_from_pem(cert: bytes, key: bytes, scratch: str) -> ssl.SSLContext:
    """A server context holding `cert` and `key`, through files that exist only while loading."""
    Path(scratch).mkdir(parents=True, exist_ok=True)
    private = tempfile.mkdtemp(prefix="metrics-cert-", dir=scratch)     # 0700
    try:
        (Path(private) / CERT_FILE).write_bytes(cert)
        fd = os.open(Path(private) / KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        ctx = _server_context()
        ctx.load_cert_chain(str(Path(private) / CERT_FILE), str(Path(private) / KEY_FILE))
        return ctx
    finally:
        shutil.rmtree(private, ignore_errors=True)


@dataclass(frozen=True)
class _Stamp:
    """What identifies one version of the files (a rotation changes at least one)."""
    files: tuple[tuple[int, int, int], ...]


class ServingCert:
    """The current server context: a directory's pair (reloaded when it changes) or a fixed one."""

    def __init__(self, cert_dir: str | None, scratch: str) -> None:
        self.cert_dir = cert_dir
        self._clock = time.monotonic
        self._lock = threading.Lock()
        self._checked = self._clock()
        self._complained = False
        if cert_dir is None:
            cert, key = self_signed(default_hosts())
            self._ctx = context_from_pem(cert, key, scratch)
            self._stamp: _Stamp | None = None
            self.source = "a self-signed certificate generated at start"
        else:
            self._stamp = self._read_stamp()
            self._ctx = self._load()
            self.source = f"{cert_dir}/{CERT_FILE}"

    def _paths(self) -> tuple[Path, Path]:
        assert self.cert_dir is not None
        return Path(self.cert_dir) / CERT_FILE, Path(self.cert_dir) / KEY_FILE

    def _read_stamp(self) -> _Stamp:
        out = []
        for p in self._paths():
            try:
                st = os.stat(p)
            except OSError as e:
                raise CertError(f"cannot read {p}: {e.strerror or e}") from None
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        return _Stamp(tuple(out))

    def _load(self) -> ssl.SSLContext:
        cert, key = self._paths()
        ctx = _server_context()
        try:
            ctx.load_cert_chain(str(cert), str(key))
        except (OSError, ssl.SSLError) as e:
            raise CertError(f"cannot load the metrics certificate {cert} with {key.name}: "
                            f"{getattr(e, 'strerror', None) or e.__class__.__name__}") from None
        return ctx

    def context(self) -> ssl.SSLContext:
        """The context for the next connection (files looked at again every RELOAD_SECONDS)."""
        with self._lock:
            if self.cert_dir is None or self._clock() - self._checked < RELOAD_SECONDS:
                return self._ctx
            self._checked = self._clock()
            try:
                stamp = self._read_stamp()
                if stamp != self._stamp:
                    self._ctx, self._stamp = self._load(), stamp
                    self._complained = False
                    log.info("metrics certificate reloaded from %s", self.cert_dir)
            except CertError as e:
                if not self._complained:
                    log.warning("%s; serving the previous certificate", e)
                    self._complained = True
            return self._ctx
