"""The sync client used from many threads, and under KeyboardInterrupt: stamps queued
behind an interrupted batch sender are still written; a caller interrupted while its stamp
queued is left out; ``sweep``'s ``on_failed`` may use the client; a batch handed to an
interrupted caller is sent when no thread can start.

Each test holds the client's requests on ``threading.Event`` gates in a wrapper of
the boto3 client (as ``test_scheduler``'s ``Gated``), so the threads meet in one
order every run; a sending thread's Ctrl-C is a ``KeyboardInterrupt`` raised by the
wrapper in that thread, a waiting caller's a signal sent to the main thread.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from xor_ack_dynamodb import Stamp, SyncXorAckDynamoDB, new_stamp, xor
from xor_ack_dynamodb.chain import ChainState
from xor_ack_dynamodb.retry import botocore_config
from xor_ack_dynamodb.table import TableSpec

from .interrupts import interrupted

T0 = 1_800_000_000.0


def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.005)


def _raw(endpoint: str) -> Any:
    return boto3.client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=botocore_config()
    )


class Gated:
    """A boto3 DynamoDB client whose requests can be held, per thread, at gates.

    ``hold_update[name]``: (entered, release) for UpdateItem in the thread ``name``;
    ``hold_get``: (entered, release) for the next GetItem of a thread the test did not
    start (the client's own writer thread); ``interrupt_batch_in``: thread names whose
    BatchExecuteStatement raises ``KeyboardInterrupt`` (Ctrl-C) before it is sent.
    """

    def __init__(self, inner: Any, named: set[str]) -> None:
        self._inner = inner
        self._named = named
        self.hold_update: dict[str, tuple[threading.Event, threading.Event]] = {}
        self.hold_get: tuple[threading.Event, threading.Event] | None = None
        self.interrupt_batch_in: set[str] = set()
        self.get_threads: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def update_item(self, **params: Any) -> Any:
        gate = self.hold_update.get(threading.current_thread().name)
        if gate is not None:
            gate[0].set()
            assert gate[1].wait(10)
        return self._inner.update_item(**params)

    def get_item(self, **params: Any) -> Any:
        me = threading.current_thread().name
        self.get_threads.append(me)
        gate = self.hold_get
        if gate is not None and me not in self._named:
            self.hold_get = None
            gate[0].set()
            assert gate[1].wait(10)
        return self._inner.get_item(**params)

    def batch_execute_statement(self, **params: Any) -> Any:
        if threading.current_thread().name in self.interrupt_batch_in:
            raise KeyboardInterrupt
        return self._inner.batch_execute_statement(**params)


def test_sync_stamp_queued_behind_a_merge_whose_batch_sender_was_interrupted_is_still_written(
    local: tuple[str, TableSpec],
) -> None:
    """With ``batch_writes=True``, the client's writer thread sends a merged write (B and
    C's stamps on "t"); its UpdateItem waits for a slot and goes out in a batch led by
    another thread (Y), which gets Ctrl-C.  D's stamp was only queued behind that merged
    write, never sent.

    The user sees D's ``stamp()`` raise ``InterruptedWrite`` and D's stamp is never
    written (the chain is left without it).  Per ``InterruptedWrite``'s docstring and
    docs/api.md ("stamps only queued behind it are written by another thread, not
    refused"), D's stamp should be written and D told its new state."""
    endpoint, spec = local
    named = {"A", "B", "C", "D", "Y", "Z", "MainThread"}
    gate = Gated(_raw(endpoint), named)
    ack = SyncXorAckDynamoDB(gate, table=spec.name, batch_writes=True, write_slots=1)
    sa, sc, sd = new_stamp(), new_stamp(), new_stamp()
    ack.create("t", xor(sa, sc, sd))  # each chain remembered: a stamp is one write
    ack.create("y", new_stamp())
    ack.create("z", new_stamp())
    told: dict[str, object] = {}

    def stamp(name: str, tag: str, value: bytes, token: str | None) -> threading.Thread:
        def run() -> None:
            try:
                told[name] = ack.stamp(tag, value, token=token)
            except BaseException as exc:  # what each caller was told, Ctrl-C included
                told[name] = exc

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        return thread

    def queued() -> int:
        with ack._queue_lock:
            return len(ack._merging.queues.get("t", []))

    def waiting() -> int:
        assert ack._batcher is not None
        with ack._queue_lock:
            return len(ack._batcher.plan.waiting)

    a_in, a_go = threading.Event(), threading.Event()
    z_in, z_go = threading.Event(), threading.Event()
    w_in, w_go = threading.Event(), threading.Event()
    gate.hold_update["A"] = (a_in, a_go)
    gate.hold_update["Z"] = (z_in, z_go)
    gate.hold_get = (w_in, w_go)
    gate.interrupt_batch_in.add("Y")

    threads = [stamp("A", "t", sa, "a")]
    assert a_in.wait(10)  # A's own write holds the only slot
    # B re-sends A's stamp with A's token (a retried task), C stamps: both queue behind A
    threads += [stamp("B", "t", sa, "a"), stamp("C", "t", sc, "c")]
    _until(lambda: queued() == 2, "B and C queued behind A")
    a_go.set()
    # The writer thread's merged write of B and C reads first (B's token is remembered)
    assert w_in.wait(10), "the writer thread never read the chain"
    threads.append(stamp("Z", "z", new_stamp(), None))
    assert z_in.wait(10)  # Z's write holds the only slot
    threads.append(stamp("Y", "y", new_stamp(), None))
    _until(lambda: waiting() == 1, "Y's write waiting for a slot")
    threads.append(stamp("D", "t", sd, "d"))
    _until(lambda: queued() == 1, "D queued behind the merged write of B and C")
    w_go.set()
    _until(lambda: waiting() == 2, "the merged write waiting behind Y's")
    z_go.set()  # the slot frees: Y leads a batch of Y's and the merged write; Ctrl-C
    for thread in threads:
        thread.join(10)
    _until(lambda: queued() == 0 and "t" not in ack._merging.queues, "chain t idle")
    assert isinstance(told["Y"], KeyboardInterrupt), told
    assert isinstance(told["D"], Stamp), (
        f"D's stamp, only queued behind the interrupted write, was refused: {told['D']!r}"
    )
    state = ack.get("t")
    assert state is not None
    assert state.stamp != xor(sc, sd), "D's stamp was never written (only A's landed)"


def test_sync_caller_interrupted_while_queued_for_a_merge_is_not_written_later(
    local: tuple[str, TableSpec],
) -> None:
    """A caller (the main thread) stamps a chain while another thread's write on it is in
    flight, so its stamp queues to be merged; Ctrl-C interrupts its wait.

    The user sees ``KeyboardInterrupt`` from ``stamp()``, and yet the client's writer
    thread writes that stamp afterwards: the chain moves under a caller told it was
    interrupted before anything of its was sent (without a token, stamping again applies
    it twice).  As with ``batch_writes`` (an interrupted write that still waits for a slot
    is withdrawn, ``test_an_interrupted_wait_for_a_batch_...``) and the async client (a
    cancelled waiter is left out, docs/design.md §5), a stamp whose caller left while it
    only queued should not be sent."""
    endpoint, spec = local
    gate = Gated(_raw(endpoint), {"A", "MainThread"})
    ack = SyncXorAckDynamoDB(gate, table=spec.name)
    sa, sb, rest = new_stamp(), new_stamp(), new_stamp()
    ack.create("t", xor(sa, sb, rest))
    a_in, a_go = threading.Event(), threading.Event()
    gate.hold_update["A"] = (a_in, a_go)
    told: dict[str, object] = {}
    a = threading.Thread(target=lambda: told.update(A=ack.stamp("t", sa)), name="A", daemon=True)
    a.start()
    assert a_in.wait(10)  # A's write on "t" is in flight

    b_told = interrupted(
        lambda: ack.stamp("t", sb),  # queued behind A's write: Ctrl-C while it waits
        when=lambda: len(ack._merging.queues.get("t", [])) == 1,
    )
    assert isinstance(b_told, KeyboardInterrupt), b_told
    a_go.set()
    a.join(10)
    assert isinstance(told.get("A"), Stamp)
    _until(lambda: "t" not in ack._merging.queues, "chain t idle")
    state = ack.get("t")
    assert state is not None
    assert state.version == 2 and state.stamp == xor(sb, rest), (
        "the interrupted caller's stamp was written after it was told KeyboardInterrupt"
    )


def test_sync_sweep_whose_on_failed_uses_the_client_does_not_hang(
    local: tuple[str, TableSpec],
) -> None:
    """A user sweeps with ``on_failed`` that reads the tombstone back through the same
    client (or deletes it, logs its state...).  The sync client runs each step of the
    sweep with its core lock held, and ``on_failed`` is called inside a step, so the
    callback's own request waits for that lock for ever: the sweep never returns (and
    every other thread of the client blocks on the lock too).  It should return the
    tombstone, the callback having read it."""
    endpoint, spec = local
    now = [T0]
    ack = SyncXorAckDynamoDB(_raw(endpoint), table=spec.name, clock=lambda: now[0])
    ack.create("late", new_stamp(), timeout=60)
    now[0] = T0 + 120  # overdue
    read: list[ChainState | None] = []
    result: dict[str, object] = {}
    done = threading.Event()

    def run() -> None:
        try:
            result["swept"] = ack.sweep(on_failed=lambda state: read.append(ack.get(state.tag)))
        except BaseException as exc:
            result["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(10), "sweep() never returned: on_failed's request waits for the core lock"
    assert "error" not in result, result
    swept = result["swept"]
    assert isinstance(swept, list) and [s.tag for s in swept] == ["late"]
    assert read and read[0] is not None and read[0].failed


def test_sync_batch_lead_handed_to_an_interrupted_caller_is_sent_when_no_thread_can_start(
    local: tuple[str, TableSpec], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``batch_writes=True, write_slots=1``: the main thread's stamp waits for the slot;
    the slot frees and its write is taken to go out (the lead handed to its inbox) just as
    Ctrl-C interrupts its wait.  The client starts a thread to send that write; in a process
    out of threads (the case ``_hand_off`` handles by writing in the caller's thread) the
    start raises.

    The user sees ``RuntimeError("can't start new thread")`` instead of
    ``KeyboardInterrupt``, and the write handed to the dead inbox is never sent, its slot
    never freed: every later batched stamp of the client waits for ever.  It should be
    flushed by the interrupted thread itself (as ``_hand_off`` falls back to) or withdrawn."""
    endpoint, spec = local
    gate = Gated(_raw(endpoint), {"H", "MainThread"})
    ack = SyncXorAckDynamoDB(gate, table=spec.name, batch_writes=True, write_slots=1)
    roots = {tag: new_stamp() for tag in ("a", "b", "c")}
    for tag, root in roots.items():
        ack.create(tag, root)  # remembered: each stamp below is one write
    h_in, h_go = threading.Event(), threading.Event()
    gate.hold_update["H"] = (h_in, h_go)
    holder = threading.Thread(
        target=ack.stamp, args=("a", xor(roots["a"], new_stamp())), name="H", daemon=True
    )
    holder.start()
    assert h_in.wait(10)  # H's write holds the only slot

    real_start = threading.Thread.start

    def no_drain_threads(self: threading.Thread) -> None:
        if getattr(getattr(self, "_target", None), "__name__", "") == "drain":
            raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", no_drain_threads)

    def slot_freed() -> None:
        # Ctrl-C lands as the slot frees: H's flush hands b's write its lead, then returns
        h_go.set()
        holder.join(10)

    told = interrupted(
        lambda: ack.stamp("b", xor(roots["b"], new_stamp())),
        when=lambda: bool(ack._batcher and ack._batcher.plan.waiting),
        first=slot_freed,
    )
    monkeypatch.undo()
    later = threading.Thread(target=ack.stamp, args=("c", roots["c"]), daemon=True)
    later.start()
    later.join(10)
    assert ack._batcher is not None
    plan = ack._batcher.plan
    assert not later.is_alive(), (
        "a later stamp waits for ever for the slot the lost lead holds",
        (plan.in_flight, len(plan.waiting)),
        told,
    )
    assert isinstance(told, KeyboardInterrupt), told


#: ``sweep``'s ``on_failed`` calling ``stamp_many`` (a pool's threads): run in a subprocess,
#: as threads that hang would keep pytest from exiting.
SWEEP_SCRIPT = textwrap.dedent(
    """
    import os, sys, threading
    import boto3
    from xor_ack_dynamodb import SyncXorAckDynamoDB, new_stamp
    from xor_ack_dynamodb.retry import botocore_config

    endpoint, table = sys.argv[1], sys.argv[2]
    raw = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                       config=botocore_config())
    now = [1_800_000_000.0]
    ack = SyncXorAckDynamoDB(raw, table=table, clock=lambda: now[0])
    ack.create("late", new_stamp(), timeout=60)
    ack.create("r1", new_stamp())
    ack.create("r2", new_stamp())
    now[0] += 120  # "late" is overdue
    result = {}
    done = threading.Event()

    def on_failed(state):
        # replay bookkeeping: stamp two other chains at once
        result["stamped"] = ack.stamp_many({"r1": new_stamp(), "r2": new_stamp()})

    def run():
        try:
            result["swept"] = ack.sweep(on_failed=on_failed)
        except BaseException as exc:
            result["error"] = repr(exc)
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    if not done.wait(20):
        print("HUNG", flush=True)
        os._exit(3)
    print("OK" if "error" not in result else result["error"], flush=True)
    os._exit(0)
    """
)


def test_sync_sweep_on_failed_calling_stamp_many_does_not_hang(
    moto_endpoint: str, moto_table: TableSpec
) -> None:
    """A user sweeps with the sync client and, in ``on_failed``, stamps two other chains
    with ``stamp_many`` (the documented way to stamp several at once; the reentrant core
    lock was introduced precisely so that ``on_failed`` may use the client).

    The user sees ``sweep()`` never return: ``stamp_many`` runs its stamps in a thread
    pool, each pool thread waits for the core lock, which the sweeping thread holds (the
    callback runs inside a locked core step) while it waits for the pool.  It should
    return the tombstone, both stamps written."""
    proc = subprocess.run(
        [sys.executable, "-c", SWEEP_SCRIPT, moto_endpoint, moto_table.name],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout.strip()
    assert out == "OK", (
        f"sweep(on_failed=... stamp_many ...) -> {out!r} (rc={proc.returncode}); "
        f"stderr: {proc.stderr[-2000:]}"
    )
