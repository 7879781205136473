"""A TLS-terminating reverse proxy in front of a dashboard, as nginx is set up by default.

It ends TLS (a self-signed certificate), serves the dashboard under a path ``prefix``
which it strips, names the upstream in ``Host`` (nginx's default ``$proxy_host``), adds
``X-Forwarded-Proto: https`` and ``X-Forwarded-For``, and passes everything else on as
it came, responses streamed (the live stream too).  One request per connection
(``Connection: close`` both ways), so each request line is seen and rewritten.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_DROPPED = {b"host", b"connection", b"keep-alive", b"proxy-connection", b"x-forwarded-proto"}


def self_signed(folder: Path, name: str) -> ssl.SSLContext:
    """A server context with a fresh self-signed certificate for ``name``."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(name), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "proxy.crt", folder / "proxy.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context


class TlsProxy:
    """``https://127.0.0.1:<port><prefix>/...`` -> ``http://<upstream>/...``."""

    def __init__(self, context: ssl.SSLContext, prefix: str) -> None:
        self.context, self.prefix = context, prefix.encode()
        self.upstream: tuple[str, int] | None = None
        self.port = 0
        self.requests: list[bytes] = []  #: the request lines as the upstream got them
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @contextlib.contextmanager
    def running(self) -> Iterator[TlsProxy]:
        self._thread.start()
        assert self._ready.wait(10), "the proxy did not start"
        try:
            yield self
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.context)
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        line, *fields = head[:-4].split(b"\r\n")
        method, target, version = line.split(b" ", 2)
        if not (target == self.prefix or target.startswith(self.prefix + b"/")):
            writer.write(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            await writer.drain()
            writer.close()
            return
        assert self.upstream is not None, "the proxy has no upstream yet"
        path = target[len(self.prefix) :] or b"/"
        self.requests.append(method + b" " + path)
        host, port = self.upstream
        kept = [f for f in fields if f.split(b":", 1)[0].strip().lower() not in _DROPPED]
        upstream_head = b"\r\n".join(
            [
                method + b" " + path + b" " + version,
                b"Host: %s:%d" % (host.encode(), port),
                *kept,
                b"X-Forwarded-Proto: https",
                b"X-Forwarded-For: 127.0.0.1",
                b"Connection: close",
            ]
        )
        up_reader, up_writer = await asyncio.open_connection(host, port)
        up_writer.write(upstream_head + b"\r\n\r\n")
        await asyncio.gather(
            _pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True
        )


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    finally:
        with contextlib.suppress(Exception):
            writer.close()
