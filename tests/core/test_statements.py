"""Many chains' first writes in PartiQL batches: ``create_many(via="partiql")``, ``stamp_on_each``.

Each chain runs the core's own operation (``create``; ``stamp_on``); only which
requests go together is new (``_statements.gather``).  Against the scripted peer:
the INSERT form of a create, each statement's answer handed to its own chain (a
duplicate key read and decided as ``create`` decides it; a refused stamp as
``ChainMoved``; a re-sent batch proven landed by its token), a batch refused whole
sent alone.  On DynamoDB Local, both clients: the chains, the requests counted, and
``known_many`` answering from the cache with a read only for what it dropped.
"""

from __future__ import annotations

from typing import Any

import pytest

from xor_ack_dynamodb import new_stamp, xor
from xor_ack_dynamodb.chain import ChainState
from xor_ack_dynamodb.dynamodb._batches import Batcher
from xor_ack_dynamodb.dynamodb._core.effects import Call, Entry
from xor_ack_dynamodb.dynamodb._core.many import Chains
from xor_ack_dynamodb.dynamodb._core.validate import check_token
from xor_ack_dynamodb.dynamodb._statements import create_each, stamp_on_each, statement_of
from xor_ack_dynamodb.errors import ChainMoved, CreateManyFailed, InvalidState, TagExists
from xor_ack_dynamodb.stamps import AppliedBefore, Stamp
from xor_ack_dynamodb.table import TableSpec

from .facade import open_client
from .peer import client_error, drive, got, item, ok

NOW = 1_000.0


def core() -> Chains:
    return Chains(table="t", clock=lambda: NOW)


def batch(*answers: dict[str, Any], retries: int = 0, unknown: int = 0) -> dict[str, Any]:
    """A BatchExecuteStatement response: one answer per statement, in order."""
    meta = {"HTTPStatusCode": 200, "RetryAttempts": retries, "XorAckUnknownAttempts": unknown}
    return {"Responses": list(answers), "ResponseMetadata": meta}


APPLIED: dict[str, Any] = {"TableName": "t"}
DUPLICATE: dict[str, Any] = {"Error": {"Code": "DuplicateItem", "Message": "exists"}}


def token_of(statement: dict[str, Any]) -> bytes:
    """The write token an INSERT statement carries (``tokens``, its only one)."""
    fields = statement["Statement"].split("{", 1)[1].split(",")
    at = [f.strip().split(":")[0].strip("' ") for f in fields].index("tokens")
    return bytes(statement["Parameters"][at]["B"])


def test_a_create_is_an_insert_of_its_item_and_a_stamp_has_none() -> None:
    c = core()
    update = c._create_update("a", Stamp(b"\x01" * 16), {}, NOW, b"t" * 8, b"c" * 8)
    insert = update.insert()
    assert insert is not None and update.statement() is None
    assert insert["Statement"].startswith("INSERT INTO \"t\" VALUE {'tagID': ?, 'stamp': ?")
    assert insert["Parameters"][:2] == [{"S": "a"}, {"B": b"\x01" * 16}]
    assert len(insert["Parameters"]) == insert["Statement"].count("?")
    state = ChainState("a", Stamp(b"\x01" * 16), b"c" * 8, 1, (b"t" * 8,), NOW, NOW)
    stamp, _ = c._stamp_update("a", state, Stamp(b"\x02" * 16), (b"u" * 8,), NOW)
    assert stamp.insert() is None and stamp.statement() is not None


def test_creates_go_as_one_batch_and_each_duplicate_is_decided_as_create_decides() -> None:
    c = core()
    stamps = {tag: Stamp(new_stamp()) for tag in ("new", "ours", "live", "closed")}
    sent: dict[str, bytes] = {}

    def answer(call: Call) -> dict[str, Any]:
        statements = call.params["Statements"]
        assert [s["Parameters"][0]["S"] for s in statements] == list(stamps)
        sent.update((s["Parameters"][0]["S"], token_of(s)) for s in statements)
        # "ours" landed on a first send whose answer was lost: the re-send meets it
        return batch(APPLIED, DUPLICATE, DUPLICATE, DUPLICATE, retries=1, unknown=1)

    script = [
        ("batch_execute_statement", answer),
        ("get_item", lambda _: got(item(stamps["ours"], tag="ours", tokens=[sent["ours"]]))),
        ("get_item", got(item(new_stamp(), tag="live"))),  # another live chain
        ("get_item", got(item(new_stamp(), tag="closed", reason="done"))),  # failed: reusable
        ("update_item", ok),  # the create again, alone: its condition lets a closed chain go
    ]
    ran = drive(create_each(c, Batcher(c.stats), stamps, {}), script)
    assert ran.result["new"] == stamps["new"] and ran.result["ours"] == stamps["ours"]
    assert isinstance(ran.result["live"], TagExists)
    assert ran.result["closed"] == stamps["closed"]
    assert c.stats.requests["BatchExecuteStatement"] == 1
    assert c.stats.resent_writes_recognised == 1
    assert c.cached("new") is not None and c.cached("closed") is not None


def _live(tag: str, version: int = 2) -> ChainState:
    return ChainState(tag, Stamp(new_stamp()), b"chain-01", version, (b"t" * 8,), 1.0, 1.0)


def test_stamps_on_states_go_as_one_batch_each_ending_with_its_chain() -> None:
    c = core()
    states = [_live(tag) for tag in ("a", "b", "c")]
    writes = [(s, Entry(s.stamp, b"tok-" + s.tag.encode())) for s in states]
    moved = item(new_stamp(), tag="b", version=3)

    def answer(call: Call) -> dict[str, Any]:
        assert len(call.params["Statements"]) == 3
        refused = {"Code": "ConditionalCheckFailed", "Message": "no", "Item": moved}
        return batch(APPLIED, {"Error": refused}, APPLIED)

    ran = drive(stamp_on_each(c, Batcher(c.stats), writes), [("batch_execute_statement", answer)])
    a, b, done = ran.result
    assert a.acked and a.version == 3 and b"tok-a" in a.tokens  # the chain as the write left it
    assert isinstance(b, ChainMoved) and b.current is not None and b.current.version == 3
    assert done.acked and c.stats.requests["BatchExecuteStatement"] == 1


def test_a_token_the_state_holds_is_not_written_and_a_batch_refused_whole_goes_alone() -> None:
    c = core()
    held = _live("held")
    held = ChainState("held", held.stamp, held.chain_id, 2, (b"t" * 8, b"already!"), 1.0, 1.0)
    states = [_live("x"), _live("y")]
    writes = [(held, Entry(Stamp(new_stamp()), b"already!"))]
    writes += [(s, Entry(Stamp(new_stamp()), None)) for s in states]
    denied = client_error("AccessDeniedException", op="BatchExecuteStatement")
    batcher = Batcher(c.stats)
    script = [("batch_execute_statement", denied), ("update_item", ok), ("update_item", ok)]
    ran = drive(stamp_on_each(c, batcher, writes), script)
    assert ran.result[0] is held  # nothing written: it holds the token already
    assert [s.version for s in ran.result[1:]] == [3, 3]
    assert not batcher.enabled  # this principal cannot batch: later writes go alone


def test_a_held_token_on_a_complete_chain_returns_it_and_stamp_on_tells_the_stamp() -> None:
    """stamp_on_each returns chains: a write whose token the complete state holds (not
    the completing one) gets that state back, ``.acked``; stamp_on, which tells the
    stamp, says ``AppliedBefore`` (not acked) there.  Neither sends anything."""
    zero = Stamp(bytes(16))
    mine, last = check_token("mine"), check_token("last")  # as the chain keeps them
    done = ChainState("d", zero, b"chain-01", 3, (mine, last), 1.0, 1.0)
    c = core()
    ran = drive(stamp_on_each(c, Batcher(c.stats), [(done, Entry(Stamp(new_stamp()), mine))]), [])
    assert ran.result == [done] and ran.result[0].acked
    (told,) = drive(c.stamp_on(done, [(new_stamp(), "mine")]), []).result
    assert isinstance(told, AppliedBefore) and not told.acked
    (again,) = drive(c.stamp_on(done, [(new_stamp(), "last")]), []).result
    assert again.acked  # the completing stamp, sent again: told acked again
    assert c.stats.total_requests == 0


def test_only_a_first_write_is_batched() -> None:
    c = core()
    update = c._create_update("a", Stamp(new_stamp()), {}, NOW, b"t" * 8, b"c" * 8)
    assert statement_of(Call("update_item", update.request(), batch=update)) is not None
    assert statement_of(Call("update_item", update.request())) is None
    assert statement_of(Call("get_item", {}, batch=update)) is None


@pytest.mark.ddblocal
async def test_on_dynamodb_local_creates_and_stamps_take_a_request_per_25_chains(
    kind: str, local: tuple[str, TableSpec]
) -> None:
    endpoint, spec = local
    async with open_client(kind, endpoint, spec.name, cache_size=40) as client:
        firsts = {f"s-{i:03d}": new_stamp() for i in range(60)}
        await client.create_many(firsts, via="partiql")
        assert dict(client.stats.requests) == {"BatchExecuteStatement": 3, "UpdateItem": 0}
        known = await client.known_many(list(firsts))  # the cache holds the last 40
        assert client.stats.requests["BatchGetItem"] == 1
        assert all(known[t] is not None and known[t].stamp == s for t, s in firsts.items())
        halves = {t: new_stamp() for t in firsts}
        out = await client.stamp_on_each([(known[t], halves[t], "half") for t in firsts])
        assert [o.version for o in out] == [2] * 60
        assert client.stats.requests["BatchExecuteStatement"] == 6
        rest = [(o, xor(firsts[o.tag], halves[o.tag]), "rest") for o in out]
        done = await client.stamp_on_each([*rest[:59], (known["s-059"], new_stamp(), "late")])
        assert all(o.acked for o in done[:59])
        assert isinstance(done[59], ChainMoved) and done[59].current.version == 2
        again = await client.stamp_on_each(rest[:1])  # a re-run: that state, its token
        assert isinstance(again[0], ChainMoved) and again[0].current.acked
        tags = {"s-059": new_stamp(), "s-000": new_stamp(), "fresh": new_stamp()}
        with pytest.raises(CreateManyFailed) as refused:
            await client.create_many(tags, via="partiql")
        assert list(refused.value.errors) == ["s-059"]  # live: TagExists
        assert isinstance(refused.value.errors["s-059"], TagExists)
        assert sorted(refused.value.results) == ["fresh", "s-000"]  # acked: a new chain
        with pytest.raises(InvalidState):
            await client.stamp_on_each([*rest[:1], *rest[:1]])
