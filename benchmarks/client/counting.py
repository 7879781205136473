"""Requests counted the same way for every implementation: hooks on its botocore client,
and for a chains client with the direct path (``connect()``'s), the same on that path."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

#: Operations whose consumed capacity is read capacity; every other one's is write capacity.
READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"})


@dataclass
class RequestCounter:
    """API calls and HTTP sends of one botocore client, counted by its event hooks.

    With ``capacity=True`` it also asks DynamoDB for ``ReturnConsumedCapacity=TOTAL`` on
    every request whose operation takes it (a ``before-parameter-build`` hook, so both
    implementations get it without a change to either) and adds up the capacity units
    the answers report, read and write apart.  An answer that is an error (a failed
    condition) reports none, although DynamoDB bills the write units of a failed
    conditional write.
    """

    calls: Counter[str] = field(default_factory=Counter)
    sends: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    answers_with_capacity: int = 0
    capacity: bool = False

    def install(self, client: Any, *, capacity: bool = False) -> None:
        client.meta.events.register("before-call.dynamodb", self._on_call)
        client.meta.events.register("before-send.dynamodb", self._on_send)
        if capacity:
            self.capacity = True
            client.meta.events.register("before-parameter-build.dynamodb", self._ask_capacity)
            client.meta.events.register("after-call.dynamodb", self._on_answer)

    def install_direct(self, direct: Any) -> None:
        """Count the requests the direct path (``_direct.Direct``) sends, as the hooks do
        botocore's: one call and one send each, capacity asked for and added up."""
        from xor_ack_dynamodb.dynamodb._direct import OPERATIONS

        call = direct.call

        async def counted(method: str, params: dict[str, Any]) -> Any:
            operation = OPERATIONS[method]
            self.calls[operation] += 1
            self.sends += 1
            if self.capacity:
                params = {**params, "ReturnConsumedCapacity": "TOTAL"}
            answer = await call(method, params)
            if self.capacity:
                self._tally(operation, answer)
            return answer

        direct.call = counted

    def _on_call(self, event_name: str, **_: Any) -> None:
        self.calls[event_name.rsplit(".", 1)[-1]] += 1

    def _on_send(self, **_: Any) -> None:
        self.sends += 1  # returning None lets botocore send the request

    def _ask_capacity(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        members = model.input_shape.members if model.input_shape is not None else {}
        if "ReturnConsumedCapacity" in members:
            params.setdefault("ReturnConsumedCapacity", "TOTAL")

    def _on_answer(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        self._tally(model.name, parsed)

    def _tally(self, operation: str, parsed: dict[str, Any]) -> None:
        consumed = parsed.get("ConsumedCapacity")
        if consumed is None:
            return
        entries = consumed if isinstance(consumed, list) else [consumed]
        units = sum(float(e.get("CapacityUnits", 0.0)) for e in entries)
        self.answers_with_capacity += 1
        if operation in READS:
            self.read_units += units
        else:
            self.write_units += units

    def snapshot(self) -> tuple[Counter[str], int]:
        return Counter(self.calls), self.sends

    def units(self) -> tuple[float, float, int] | None:
        """Read units, write units and answers that reported any, so far (None: not asked)."""
        if not self.capacity:
            return None
        return self.read_units, self.write_units, self.answers_with_capacity
