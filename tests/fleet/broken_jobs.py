"""A handler module that fails as it is imported (its configuration is missing), as a user's
module does: ``xor-ack worker --handler tests.fleet.broken_jobs:handle`` must say so, not call
it a bug of xor-ack."""

from __future__ import annotations

import os

BUCKET = os.environ["XOR_ACK_TESTS_NO_SUCH_SETTING"]


def handle(message: object) -> list[object]:
    return []
