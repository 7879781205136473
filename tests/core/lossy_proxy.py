"""A loopback HTTP proxy in front of DynamoDB that loses responses or throttles requests.

It parses just enough HTTP/1.1 (headers, Content-Length or chunked bodies) to
know where one request and one response end, so it can

- forward a write, let it land, and close the client's connection instead of
  answering (``drop``): exactly what a dropped connection after a successful
  write looks like to botocore, which then re-sends the request;
- answer a request itself with a 400 ``ThrottlingException`` or
  ``ProvisionedThroughputExceededException`` without forwarding it
  (``throttle``): what DynamoDB says when it refuses a request for capacity.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import threading
from collections.abc import Callable, Collection
from urllib.parse import urlparse

#: Decides, from the request's X-Amz-Target and body, whether to lose its response.
DropRule = Callable[[str, bytes], bool]
#: The operations that write: the ones a fault rule usually aims at.
WRITES = frozenset({"UpdateItem", "TransactWriteItems", "BatchExecuteStatement"})
THROTTLE_CODES = ("ThrottlingException", "ProvisionedThroughputExceededException")


def _read_until(sock: socket.socket, buf: bytearray, marker: bytes) -> bytes | None:
    while marker not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, _, rest = bytes(buf).partition(marker)
    buf[:] = rest
    return head


def _read_exact(sock: socket.socket, buf: bytearray, n: int) -> bytes:
    while len(buf) < n:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("peer closed mid-body")
        buf += chunk
    out = bytes(buf[:n])
    del buf[:n]
    return out


Message = tuple[bytes, dict[str, str], bytes]


def _read_message(sock: socket.socket, buf: bytearray) -> Message | None:
    head = _read_until(sock, buf, b"\r\n\r\n")
    if head is None:
        return None
    lines = head.split(b"\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size_line = _read_until(sock, buf, b"\r\n")
            if size_line is None:
                raise ConnectionError("peer closed mid-chunk")
            size = int(size_line.split(b";")[0], 16)
            data = _read_exact(sock, buf, size + 2)
            if size == 0:
                break
            body += data[:-2]
        raw_body = bytes(body)
        # Re-frame as Content-Length so the client sees a plain message.
        head = (
            b"\r\n".join(
                line for line in lines if not line.lower().startswith(b"transfer-encoding")
            )
            + f"\r\nContent-Length: {len(raw_body)}".encode()
        )
        return head + b"\r\n\r\n", headers, raw_body
    length = int(headers.get("content-length", "0"))
    return head + b"\r\n\r\n", headers, _read_exact(sock, buf, length)


def throttle_response(code: str) -> bytes:
    """The whole HTTP response DynamoDB gives a request it refuses for capacity."""
    body = json.dumps(
        {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": "injected " + code}
    ).encode()
    head = (
        "HTTP/1.1 400 Bad Request\r\n"
        "Content-Type: application/x-amz-json-1.0\r\n"
        "x-amzn-RequestId: injected\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _never(target: str, body: bytes) -> bool:
    return False


class LossyProxy:
    """Proxy on 127.0.0.1 in front of ``upstream``.

    ``drop`` picks the responses to lose (after the request landed upstream),
    ``throttle`` the requests to refuse with a 400 throttling error unforwarded.
    """

    def __init__(self, upstream: str, drop: DropRule = _never, throttle: DropRule = _never) -> None:
        parsed = urlparse(upstream)
        self.upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self.drop = drop
        self.throttle = throttle
        self.dropped: list[str] = []
        self.forwarded: list[str] = []
        self.throttled: list[str] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.endpoint_url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self._stopping = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()  # both ends of each connection served

    def __enter__(self) -> LossyProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping = True
        self._server.close()

    def cut(self) -> None:
        """DynamoDB gone: connections refused from now on, and those open reset."""
        self._stopping = True
        with contextlib.suppress(OSError):  # wakes the accept() under way (close does not)
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def _accept(self) -> None:
        while not self._stopping:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            if self._stopping:  # accepted as it was cut
                raise ConnectionRefusedError
            upstream = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        with self._lock:
            self._open |= {client, upstream}
        cbuf, ubuf = bytearray(), bytearray()
        try:
            while True:
                request = _read_message(client, cbuf)
                if request is None:
                    return
                head, headers, body = request
                target = headers.get("x-amz-target", "").rpartition(".")[2]
                with self._lock:
                    refuse = self.throttle(target, body)
                    if refuse:
                        self.throttled.append(target)
                if refuse:
                    client.sendall(throttle_response(THROTTLE_CODES[len(self.throttled) % 2]))
                    continue
                upstream.sendall(head + body)
                response = _read_message(upstream, ubuf)
                if response is None:
                    return
                with self._lock:
                    lose = self.drop(target, body)
                    (self.dropped if lose else self.forwarded).append(target)
                if lose:
                    return  # the write landed upstream; the client never hears of it
                rhead, _, rbody = response
                client.sendall(rhead + rbody)
        except (ConnectionError, OSError):
            return
        finally:
            with self._lock:
                self._open -= {client, upstream}
            client.close()
            upstream.close()


def drop_first(target: str, count: int = 1) -> DropRule:
    """Lose the responses of the first ``count`` requests to ``target`` (e.g. "UpdateItem")."""
    left = [count]

    def rule(seen: str, body: bytes) -> bool:
        if seen == target and left[0] > 0:
            left[0] -= 1
            return True
        return False

    return rule


def at_random(
    fraction: float, seed: int, targets: Collection[str] = WRITES, limit: int | None = None
) -> DropRule:
    """Pick requests to ``targets`` with probability ``fraction`` (seeded), at most ``limit``."""
    rng = random.Random(seed)
    picked = [0]

    def rule(seen: str, body: bytes) -> bool:
        if seen not in targets or (limit is not None and picked[0] >= limit):
            return False
        if rng.random() < fraction:
            picked[0] += 1
            return True
        return False

    return rule
