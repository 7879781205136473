"""Metrics through the OpenTelemetry API (optional) and structured log lines."""

from __future__ import annotations

import importlib
import json
import logging
import sys
from collections import Counter
from typing import Any

import pytest

from xor_ack_dynamodb.fleet import telemetry


class Recorder:
    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()
        self.latencies: list[float] = []

    def counter(self, name: str) -> Any:
        recorder = self

        class Instrument:
            def add(self, amount: float, attributes: dict[str, Any] | None = None) -> None:
                label = ",".join(f"{k}={v}" for k, v in sorted((attributes or {}).items()))
                recorder.counts[(name, label)] += int(amount)

        return Instrument()


def test_without_opentelemetry_every_instrument_is_a_no_op(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # an import of it fails
    try:
        module = importlib.reload(telemetry)
        assert module._otel is None
        tm = module.Telemetry()
        tm.count("stamps", 3)
        tm.complete_latency.record(1.5)
    finally:
        monkeypatch.delitem(sys.modules, "opentelemetry")
        importlib.reload(telemetry)
    assert telemetry._otel is not None  # the API is installed here: real instruments


@pytest.mark.ddblocal
async def test_a_job_counts_and_logs(
    harness_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()
    async with harness_factory() as h:
        tm = h.fleet.telemetry
        tm.counters = {name: recorder.counter(name) for name in telemetry.COUNTERS}
        tm.complete_latency = type(
            "H", (), {"record": lambda self, v, a=None: recorder.latencies.append(v)}
        )()
        with caplog.at_level(logging.INFO, logger="xor_ack_dynamodb.fleet"):
            root = await h.fleet.submit("job-metrics", {"width": 2, "depth": 1})
            await h.drain()
            await h.fleet.handle(root.to_json())  # a duplicate
    counts = recorder.counts
    assert counts[("messages", "outcome=applied")] == 3
    assert counts[("messages", "outcome=duplicate")] == 1  # the root again, after the ack
    assert counts[("stamps", "")] == 3
    assert counts[("chains", "outcome=acked")] == 1
    assert counts[("continuations", "")] == 1
    assert counts[("writes", "")] >= 3
    assert len(recorder.latencies) == 1 and recorder.latencies[0] >= 0
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name.endswith("fleet")]
    applied = [line for line in lines if line["event"] == "applied"]
    assert len(applied) == 3
    assert {line["tag"] for line in applied} == {"job-metrics"}
    assert root.message_id in {line["message_id"] for line in applied}
    assert any(line["event"] == "acked" for line in lines)
