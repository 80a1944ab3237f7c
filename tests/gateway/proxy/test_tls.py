"""TLS to replicas against a local TLS server with a CA made for the test: the certificate is
verified (against the variant's CA bundle; the system's CAs refuse it), the host name is checked,
SNI names the host, and the exchange is the same HTTP/1.1 as over plain TCP."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import yaml

from gateway.config import load_config
from gateway.config.types import DuetConfig
from gateway.errors import ConfigError
from gateway.proxy.http1 import Pool, UpstreamError
from gateway.proxy.tls import UpstreamTls, verifying_context
from tests.tls_certs import TlsFiles, make_certificates

DEMO = Path(__file__).resolve().parents[3] / "deploy" / "config" / "demo.yaml"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_certificates(tmp_path_factory.mktemp("tls"))


@asynccontextmanager
async def tls_server(files: TlsFiles, server_names: list[str | None]) -> AsyncIterator[int]:
    """An HTTP/1.1 server over TLS on a loopback port, answering "ok" and noting each SNI name."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(files.cert, files.key)
    context.sni_callback = lambda sock, name, ctx: server_names.append(name)  # type: ignore[assignment,misc,func-returns-value]

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 4\r\n\r\n\"ok\"")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass  # a client that refused our certificate hangs up mid-handshake
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


def test_https_is_tls_verified_against_the_ca_bundle_with_sni(certificates: TlsFiles) -> None:
    names: list[str | None] = []

    async def main() -> tuple[int, bytes]:
        async with tls_server(certificates, names) as port:
            pool = Pool(connect_timeout_s=5, idle_timeout_s=5, tls=lambda _: verifying_context(str(certificates.ca)))
            try:
                response = await pool.post(f"https://localhost:{port}", "/v1/chat/completions", b"{}")
                return response.status, await response.read()
            finally:
                pool.close()

    assert asyncio.run(main()) == (200, b'"ok"')
    assert names == ["localhost"]


@pytest.mark.parametrize(("host", "ca", "reason"), [
    ("localhost", None, "certificate verify failed"),  # the system's CAs do not know the test CA
    ("127.0.0.1", "ca", "certificate verify failed"),  # signed for localhost, not this address
])
def test_a_certificate_that_does_not_verify_is_an_upstream_error(certificates: TlsFiles, host: str, ca: str | None,
                                                                  reason: str) -> None:
    async def main() -> None:
        async with tls_server(certificates, []) as port:
            pool = Pool(connect_timeout_s=5, idle_timeout_s=5,
                        tls=lambda _: verifying_context(str(certificates.ca) if ca else None))
            try:
                await pool.post(f"https://{host}:{port}", "/v1/chat/completions", b"{}")
            finally:
                pool.close()

    with pytest.raises(UpstreamError, match=reason):
        asyncio.run(main())


def config_with(tmp: Path, ca_bundle: str | None, url: str = "https://localhost:8443") -> DuetConfig:
    raw = yaml.safe_load(DEMO.read_text())
    fast = raw["models"]["smollm2"]["variants"]["fast"]
    fast["replicas"] = [{"url": url}]
    if ca_bundle is not None:
        fast["ca_bundle"] = ca_bundle
    path = tmp / "duet.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_config(path)


def test_each_https_replica_gets_its_variants_ca_bundle_and_http_stays_plain(certificates: TlsFiles,
                                                                           tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_bytes(certificates.ca.read_bytes())
    config = config_with(tmp_path, "ca.pem")  # relative to the config file
    assert config.models["smollm2"].ca_bundles == {"fast": str(tmp_path / "ca.pem")}
    tls = UpstreamTls(lambda: config)
    context = tls.context_for("https://localhost:8443")
    assert context is not None and context.verify_mode is ssl.CERT_REQUIRED and context.check_hostname
    assert tls.context_for("https://localhost:8443") is context  # built once
    standard = next(r.url for r in config.replicas if r.variant == "standard")
    assert tls.context_for(standard) is None  # http://
    assert context.get_ca_certs()  # the bundle's CA was loaded


def test_a_missing_ca_bundle_is_a_config_error_naming_its_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        config_with(tmp_path, "nowhere.pem")
    assert error.value.path == "models.smollm2.variants.fast.ca_bundle"
