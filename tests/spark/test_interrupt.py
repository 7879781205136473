"""Ctrl-C in the middle of a tracked job: the jobs are cancelled, nothing half-committed."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from xor_ack_dynamodb.spark import Sink, track

# The workers cannot import this test module (pytest names it from the tests folder): its
# function travels by value, so the tasks do sleep rather than fail to load it.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def slow(key: str, rows: Any) -> Any:
    import pyarrow as pa

    time.sleep(20)
    return pa.table({"key": [key]})


def test_a_keyboard_interrupt_cancels_the_round_and_leaves_no_output(
    local_spark: Any, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    timer = threading.Timer(3.0, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            track(local_spark, slow, "key string", Sink(str(out)), keys=["a", "b"], tracking=False)
    finally:
        timer.cancel()
    # The jobs were cancelled (each task sleeps 20 s), the staging folder removed,
    # and the output never appeared.
    assert time.monotonic() - started < 20
    assert list(tmp_path.iterdir()) == []
    # The session is still usable.
    assert local_spark.range(3).count() == 3
