"""The library's plain-Python parts: where the chains live, and the row digests."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from xor_ack_dynamodb.spark import TrackingNotConfigured, chains_config
from xor_ack_dynamodb.spark.digest import MOD, row_sum, rows_stamp
from xor_ack_dynamodb.spark.keyed import Keyed


class FakeConf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


class FakeSession:
    def __init__(self, values: dict[str, str]) -> None:
        self.conf = FakeConf(values)


def test_argument_beats_session_conf_beats_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XOR_ACK_TABLE", "from-env")
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    session = FakeSession({"spark.xorack.table": "from-conf", "spark.xorack.region": "us-east-2"})
    config = chains_config(session)
    assert (config.table, config.region, config.endpoint_url) == (
        "from-conf",
        "us-east-2",
        "http://127.0.0.1:1",
    )
    assert chains_config(session, table="from-arg").table == "from-arg"
    assert chains_config(FakeSession({})).table == "from-env"
    assert config.transactions is False  # one write unit per stamp on AWS


def test_no_table_anywhere_is_an_error_that_says_where_to_name_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("XOR_ACK_TABLE", raising=False)
    with pytest.raises(TrackingNotConfigured, match=r"spark\.xorack\.table") as info:
        chains_config(FakeSession({}))
    assert info.value.code == "TrackingNotConfigured"


def test_row_sum_ignores_order_and_splits_but_counts_duplicates() -> None:
    rows = pa.table({"word": ["a", "b", "c", "a"], "n": [1, 2, 3, 1]})
    whole = row_sum("run", rows, ["word", "n"])
    reordered = row_sum("run", rows.take([3, 2, 1, 0]), ["word", "n"])
    parts = (
        row_sum("run", rows.slice(0, 1), ["word", "n"])
        + row_sum("run", rows.slice(1), ["word", "n"])
    ) % MOD
    assert whole == reordered == parts
    once = row_sum("run", rows.slice(0, 3), ["word", "n"])
    assert once != whole  # the duplicate row counts (an XOR of hashes would cancel it)
    keyed = Keyed("run")
    assert rows_stamp(keyed, "t#1", whole) != rows_stamp(keyed, "t#1", once)
    assert rows_stamp(keyed, "t#1", whole) != rows_stamp(keyed, "t#2", whole)
