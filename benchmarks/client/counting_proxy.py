"""An HTTP proxy in front of DynamoDB that counts requests, items and capacity units by rule.

Every process that writes the chains (the Spark driver and every Python worker)
goes through it, so it sees what DynamoDB would bill: per operation, the requests;
per item written, its write units by AWS's rules for this table; per item read,
its read units.  DynamoDB Local does not report capacity for batched statements
(and reports transactions wrongly), so the units are counted by the rules:

- a write of an item of at most 1 KB (every chain item here) costs 1 WRU on the
  table, applied or refused by its condition; in a transaction, twice that;
- each inventory index entry put or deleted (KEYS_ONLY: 1 KB at most) costs 1 WRU:
  a create puts the open entry, the stamp that acks deletes it, ``fail`` deletes it
  and puts the failed entry (``docs/inventory.md``, ``benchmarks/bench_inventory.py``,
  which reads the same from DynamoDB Local's ``ConsumedCapacity`` of single writes);
- a strongly consistent read of an item of at most 4 KB costs 1 RRU.

It runs as a subprocess (``CountingProxy``), bound to 127.0.0.1; its stdin takes
``stats`` (answered with one JSON line on stdout: the counts since the last
``reset``) and ``reset``; it stops when its stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

try:  # imported from the package, or run as the proxy's own process (a script)
    from .proxy_process import ProxyProcess
except ImportError:
    from proxy_process import ProxyProcess  # type: ignore[import-not-found, no-redef]

#: Write kinds: table WRU, index WRU when applied.
KINDS = {"create": (1, 1), "stamp": (1, 0), "ack": (1, 1), "fail": (1, 2), "other": (1, 0)}


class Tally:
    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.items: Counter[str] = Counter()  # "create applied", "stamp refused", ...
        self.wru = 0.0
        self.rru = 0.0

    def write(self, kind: str, applied: bool, factor: int = 1) -> None:
        table, index = KINDS[kind]
        self.items[f"{kind} {'applied' if applied else 'refused'}"] += 1
        self.wru += factor * (table + (index if applied else 0))

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": dict(self.requests),
            "total_requests": sum(self.requests.values()),
            "items": dict(self.items),
            "wru": self.wru,
            "rru": self.rru,
        }


def _kind_of_update(params: dict[str, Any]) -> str:
    names = params.get("ExpressionAttributeNames", {}).values()
    condition = params.get("ConditionExpression", "")
    if "attribute_not_exists(#pk)" in condition and "version" in names:
        return "create"
    if "failed_at" in names and "REMOVE" in params.get("UpdateExpression", ""):
        return "fail"
    if "acked_at" in names:
        return "ack"
    return "stamp"


def _kind_of_statement(text: str) -> str:
    if text.startswith("INSERT"):
        return "create"
    if '"acked_at"' in text:
        return "ack"
    return "stamp"


def count(tally: Tally, target: str, request: dict[str, Any], status: int, answer: Any) -> None:
    """One request and its answer into ``tally``."""
    op = target.rsplit(".", 1)[-1]
    tally.requests[op] += 1
    ok = status == 200
    if op == "UpdateItem":
        tally.write(_kind_of_update(request), ok)
    elif op == "BatchExecuteStatement":
        statements = request.get("Statements", [])
        responses = answer.get("Responses", []) if ok and isinstance(answer, dict) else []
        for i, statement in enumerate(statements):
            applied = ok and i < len(responses) and "Error" not in responses[i]
            tally.write(_kind_of_statement(statement.get("Statement", "")), applied)
    elif op == "TransactWriteItems":
        for action in request.get("TransactItems", []):
            update = action.get("Update")
            tally.write(_kind_of_update(update) if update else "other", ok, factor=2)
    elif op == "BatchGetItem":
        tally.rru += sum(len(t.get("Keys", [])) for t in request.get("RequestItems", {}).values())
    elif op in ("GetItem", "Query", "Scan"):
        tally.rru += 1
    elif op in ("PutItem", "DeleteItem"):
        tally.write("other", ok)


async def _read_message(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    headers: dict[str, str] = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            data = await reader.readexactly(size + 2)
            if size == 0:
                break
            body += data[:-2]
        lines = [
            line
            for line in head[:-4].split(b"\r\n")
            if not line.lower().startswith(b"transfer-encoding")
        ]
        lines.append(f"Content-Length: {len(body)}".encode())
        return b"\r\n".join(lines) + b"\r\n\r\n", headers, bytes(body)
    length = int(headers.get("content-length", "0"))
    return head, headers, await reader.readexactly(length) if length else b""


async def _serve(upstream: tuple[str, int]) -> None:
    tally = Tally()

    async def connection(c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        try:
            u_reader, u_writer = await asyncio.open_connection(*upstream)
        except OSError:
            c_writer.close()
            return
        try:
            while True:
                head, headers, body = await _read_message(c_reader)
                u_writer.write(head + body)
                await u_writer.drain()
                r_head, _, r_body = await _read_message(u_reader)
                c_writer.write(r_head + r_body)
                await c_writer.drain()
                status = int(r_head.split(b" ", 2)[1])
                try:
                    request = json.loads(body) if body else {}
                    answer = json.loads(r_body) if r_body else {}
                except ValueError:
                    request, answer = {}, {}
                count(tally, headers.get("x-amz-target", "?"), request, status, answer)
        except (asyncio.IncompleteReadError, ConnectionError, OSError, ValueError):
            pass
        except asyncio.CancelledError:  # the proxy stops with this connection open
            pass
        finally:
            for w in (u_writer, c_writer):
                w.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    async with server:
        while line := await stdin.readline():
            command = line.decode().strip()
            if command == "reset":
                tally = Tally()
            elif command == "stats":
                print(json.dumps(tally.as_dict()), flush=True)


class CountingProxy(ProxyProcess):
    """``with CountingProxy(url) as proxy``: ``proxy.endpoint_url``, ``stats()``, ``reset()``."""

    name = "counting proxy"

    def __init__(self, upstream_url: str) -> None:
        super().__init__()
        host, _, port = upstream_url.split("://", 1)[-1].rstrip("/").rpartition(":")
        self.upstream = f"{host}:{port}"

    def __enter__(self) -> CountingProxy:
        self._start(str(Path(__file__).resolve()), self.upstream)
        return self

    def _say(self, command: str) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()

    def reset(self) -> None:
        self._say("reset")

    def stats(self) -> dict[str, Any]:
        self._say("stats")
        assert self._process is not None and self._process.stdout is not None
        data: dict[str, Any] = json.loads(self._process.stdout.readline())
        return data


if __name__ == "__main__":
    host, _, port = sys.argv[1].rpartition(":")
    asyncio.run(_serve((host, int(port))))
