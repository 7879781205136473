"""Stream records -> typed events: AWS's documented Lambda format, the GetRecords format,
the transition tables row by row, and corrupt records."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest

from xor_ack_dynamodb import events
from xor_ack_dynamodb.errors import CorruptRecord, InvalidArgument, XorAckError
from xor_ack_dynamodb.events import transitions

from . import samples


def kinds(batch: list[dict[str, Any]]) -> list[list[str]]:
    return [[e.kind for e in events.decode(r)] for r in batch]


def test_the_life_of_chains_in_the_lambda_format() -> None:
    batch = samples.life_of_chains()
    assert kinds(batch) == [
        ["created"],
        [],  # an intermediate stamp
        ["acked"],
        ["created"],
        ["failed"],
        ["created"],
        ["timed_out"],
        ["created"],  # tombstone -> live with a new chain_id
        ["expired"],
        ["expired"],
        ["created"],
        ["deleted"],
    ]
    (created,) = events.decode(batch[0])
    assert created == events.Created("job-1", b"\x01" * 8, 1700000000.5)
    (acked,) = events.decode(batch[2])
    assert acked == events.Acked("job-1", b"\x01" * 8, 1700000012.75, 12.25)
    (failed,) = events.decode(batch[4])
    assert failed == events.Failed("job-2", b"\x02" * 8, 1700000030, "boom")
    assert type(failed) is events.Failed
    (timed_out,) = events.decode(batch[6])
    assert timed_out == events.TimedOut("job-3", b"\x03" * 8, 1700000030)
    assert isinstance(timed_out, events.Failed) and timed_out.reason == "timeout"
    (again,) = events.decode(batch[7])
    assert (again.chain_id, again.time) == (b"\x04" * 8, 1700000200)
    (lost,) = events.decode(batch[8])
    assert lost == events.Expired("job-5", b"\x05" * 8, 1700000100, "live")
    assert isinstance(lost, events.Expired) and lost.lost
    (collected,) = events.decode(batch[9])
    assert isinstance(collected, events.Expired)
    assert (collected.state, collected.lost) == ("failed", False)
    (deleted,) = events.decode(batch[11])
    assert deleted == events.Deleted("job-6", b"\x06" * 8, 1700000100, "live")


def test_a_literal_ttl_record_as_aws_documents_it() -> None:
    # https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/time-to-live-ttl-streams.html:
    # a TTL deletion's record has userIdentity {type: Service, principalId: dynamodb.amazonaws.com}
    record = {
        "eventID": "c4ca4238a0b923820dcc509a6f75849b",
        "eventName": "REMOVE",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1700000100,
            "Keys": {"tagID": {"S": "job-9"}},
            "OldImage": {
                "tagID": {"S": "job-9"},
                "stamp": {"B": "AAAAAAAAAAA="},
                "chain_id": {"B": "CQkJCQkJCQk="},
                "version": {"N": "4"},
                "tokens": {"B": "AAECAwQFBgc="},
                "created_at": {"N": "1700000000"},
                "updated_at": {"N": "1700000009"},
                "acked_at": {"N": "1700000009"},
                "expires_at": {"N": "1700086409"},
            },
            "SequenceNumber": "4421584500000000017450439091",
            "SizeBytes": 120,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        },
        "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
        "eventSourceARN": samples.ARN,
    }
    assert events.decode(record) == [events.Expired("job-9", b"\x09" * 8, 1700000100, "acked")]
    del record["userIdentity"]  # the same removal replicated to another Region, or delete()
    assert events.decode(record) == [events.Deleted("job-9", b"\x09" * 8, 1700000100, "acked")]


def to_boto(record: dict[str, Any]) -> dict[str, Any]:
    """The same record as ``get_records`` returns it: bytes, a datetime, capitalised identity."""
    out = copy.deepcopy(record)
    body = out["dynamodb"]
    body["ApproximateCreationDateTime"] = dt.datetime.fromtimestamp(
        body["ApproximateCreationDateTime"], dt.UTC
    )
    for name in ("NewImage", "OldImage", "Keys"):
        for value in body.get(name, {}).values():
            if "B" in value:
                value["B"] = samples.base64.b64decode(value["B"])
    if "userIdentity" in out:
        identity = out.pop("userIdentity")
        out["userIdentity"] = {"Type": identity["type"], "PrincipalId": identity["principalId"]}
    del out["eventSourceARN"]
    return out


def test_the_getrecords_format_decodes_to_the_same_events() -> None:
    for record in samples.life_of_chains():
        assert events.decode(to_boto(record)) == events.decode(record)


def test_dynamodb_local_ttl_name_without_user_identity_is_an_expiry() -> None:
    record = samples.record("REMOVE", old=samples.chain_image("job-7"))
    record["eventName"] = "UNKNOWN_TO_SDK_VERSION"
    (event,) = events.decode(record)
    assert isinstance(event, events.Expired) and event.lost


def test_a_create_over_a_live_chain_past_its_ttl_expires_the_old_one_first() -> None:
    old = samples.chain_image("job-8", expires_at="1700000001")
    new = samples.chain_image("job-8", chain_id=b"\x08" * 8, created_at="1700000300")
    found = events.decode(samples.record("MODIFY", old=old, new=new))
    assert [e.kind for e in found] == ["expired", "created"]
    assert [e.chain_id for e in found] == [b"\x01" * 8, b"\x08" * 8]


def test_an_insert_of_a_finished_chain_is_created_and_finished() -> None:
    found = events.decode(samples.record("INSERT", new=samples.acked("job-10")))
    assert [e.kind for e in found] == ["created", "acked"]


STATES: dict[str, dict[str, Any]] = {
    "live": samples.chain_image("t"),
    "acked": samples.acked("t"),
    "failed": samples.failed("t"),
    "timed_out": samples.failed("t", "timeout"),
}


@pytest.mark.parametrize(("old", "new"), list(transitions.SAME_CHAIN))
def test_every_same_chain_row(old: str, new: str) -> None:
    found = events.decode(samples.record("MODIFY", old=STATES[old], new=STATES[new]))
    assert tuple(e.kind for e in found) == transitions.SAME_CHAIN[old, new]


@pytest.mark.parametrize(("state", "removal"), list(transitions.REMOVED))
def test_every_removed_row(state: str, removal: str) -> None:
    found = events.decode(samples.record("REMOVE", old=STATES[state], ttl=removal == "ttl"))
    assert tuple(e.kind for e in found) == transitions.REMOVED[state, removal]  # type: ignore[index]
    assert all(isinstance(e, events.Expired | events.Deleted) and e.state == state for e in found)


@pytest.mark.parametrize("old", list(transitions.REPLACED))
@pytest.mark.parametrize("new", list(transitions.NEW_CHAIN))
def test_every_new_chain_row(old: str, new: str) -> None:
    new_image = dict(STATES[new], chain_id={"B": samples.b64(b"\x0f" * 8)})
    record = (
        samples.record("INSERT", new=new_image)
        if old == "absent"
        else samples.record("MODIFY", old=STATES[old], new=new_image)
    )
    found = events.decode(record)
    expected = transitions.REPLACED[old] + transitions.NEW_CHAIN[new]  # type: ignore[index]
    assert tuple(e.kind for e in found) == expected


def test_event_ids_are_deterministic_and_distinct() -> None:
    batch = samples.life_of_chains()
    first = [e.id for r in batch for e in events.decode(r)]
    again = [e.id for r in copy.deepcopy(batch) for e in events.decode(r)]
    assert first == again
    assert len(set(first)) == len(first)
    boto = [e.id for r in batch for e in events.decode(to_boto(r))]
    assert boto == first


def test_as_dict_is_json_ready() -> None:
    (acked,) = events.decode(samples.life_of_chains()[2])
    assert acked.as_dict() == {
        "kind": "acked",
        "id": acked.id,
        "tag": "job-1",
        "chain_id": "01" * 8,
        "time": 1700000012.75,
        "latency": 12.25,
    }


def corrupt(mutate: Any) -> dict[str, Any]:
    record = samples.record("MODIFY", old=samples.chain_image("bad"), new=samples.acked("bad"))
    mutate(record)
    return record


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (
            lambda r: r["dynamodb"]["NewImage"].pop("stamp"),
            'new image of "bad" whose attribute "stamp" is missing',
        ),
        (lambda r: r["dynamodb"]["OldImage"]["version"].update(N="1.5"), "old image"),
        (lambda r: r["dynamodb"]["NewImage"]["stamp"].update(B="not base64!"), "not base64"),
        (lambda r: r["dynamodb"].pop("NewImage"), "without a new image"),
        (lambda r: r.update(eventName="PUT"), "eventName 'PUT'"),
        (lambda r: r.update(eventSource="aws:sqs"), "eventSource 'aws:sqs'"),
        (lambda r: r.pop("dynamodb"), "has no 'dynamodb'"),
    ],
)
def test_a_corrupt_record_is_a_typed_error_naming_it(mutate: Any, problem: str) -> None:
    record = corrupt(mutate)
    with pytest.raises(CorruptRecord) as caught:
        events.decode(record)
    assert isinstance(caught.value, XorAckError) and caught.value.code == "CorruptRecord"
    assert problem in str(caught.value)
    if "dynamodb" in record:
        assert record["dynamodb"]["SequenceNumber"] in caught.value.record


def test_a_remove_without_an_old_image_is_corrupt() -> None:
    record = samples.record("REMOVE", old=samples.chain_image("x"))
    del record["dynamodb"]["OldImage"]  # a KEYS_ONLY or NEW_IMAGE stream
    with pytest.raises(CorruptRecord, match="without an old image"):
        events.decode(record)


@pytest.mark.parametrize(
    "new",
    [
        samples.chain_image("x", stamp=b"\x33" * 8, version=2, updated_at="1700000005"),
        samples.acked("x", version=3),
    ],
    ids=["stamped", "acked"],
)
def test_a_modify_without_an_old_image_is_corrupt_not_a_new_chain(new: dict[str, Any]) -> None:
    record = samples.record("MODIFY", old=samples.chain_image("x"), new=new)
    del record["dynamodb"]["OldImage"]  # a NEW_IMAGE stream: every stamp would be "created"
    with pytest.raises(CorruptRecord, match="MODIFY without an old image") as caught:
        events.decode(record)
    assert "NEW_AND_OLD_IMAGES" in str(caught.value)


def test_another_partition_key() -> None:
    image = samples.chain_image("k")
    image["pk"] = image.pop("tagID")
    (event,) = events.decode(samples.record("INSERT", new=image), partition_key="pk")
    assert event.tag == "k"


@pytest.mark.parametrize("record", [None, "INSERT", 5, [{"dynamodb": {}}]], ids=repr)
def test_a_record_that_is_no_mapping_is_corrupt_record_saying_what_it_is(record: Any) -> None:
    with pytest.raises(CorruptRecord) as caught:
        events.decode(record)
    message = str(caught.value)
    kind = type(record).__name__
    assert message.startswith(f"stream record ? is a {kind}, not a mapping"), message
    assert caught.value.record == "record ?"


@pytest.mark.parametrize("key", [5, None, "", b"tagID"], ids=repr)
def test_a_partition_key_that_is_no_name_is_invalid_argument_not_a_corrupt_record(
    key: Any,
) -> None:
    record = samples.record("INSERT", new=samples.chain_image("k"))
    with pytest.raises(InvalidArgument, match=r"partition_key must be a non-empty str") as caught:
        events.decode(record, partition_key=key)
    assert repr(key) in str(caught.value)
    with pytest.raises(InvalidArgument, match=r"partition_key"):
        events.decode(None, partition_key=key)  # the argument first, then the record
