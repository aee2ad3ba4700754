"""TLS from certificate/key settings on HTTP and gRPC, TLS 1.2 as the floor."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path

import grpc
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

from .fakes import BlockedLoadRuntime
from .support import RunningServer, server_settings


def self_signed(directory: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = directory / "cert.pem", directory / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return certfile, keyfile


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tls_http_and_grpc(tmp_path: Path) -> None:
    certfile, keyfile = self_signed(tmp_path)
    runtime = BlockedLoadRuntime()
    runtime.release.set()
    running = RunningServer(server_settings(tls_certfile=certfile, tls_keyfile=keyfile), runtime)
    try:
        assert httpx.get(running.base + "/healthz", verify=str(certfile)).status_code == 200
        with pytest.raises(httpx.TransportError):
            httpx.get(running.base.replace("https", "http") + "/healthz")
        old = ssl.create_default_context(cafile=str(certfile))
        old.minimum_version = ssl.TLSVersion.TLSv1
        old.maximum_version = ssl.TLSVersion.TLSv1_1
        old.set_ciphers("ALL:@SECLEVEL=0")
        with pytest.raises(httpx.ConnectError, match=r"(?i)version|protocol"):
            httpx.get(running.base + "/healthz", verify=old)
        credentials = grpc.ssl_channel_credentials(root_certificates=certfile.read_bytes())
        with grpc.secure_channel(running.grpc, credentials) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert reply.status in (health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING)
    finally:
        running.stop()
