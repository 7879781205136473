"""Names users may still import: they work, with a DeprecationWarning that says what to do."""

from __future__ import annotations

import pytest


def test_output_schema_mismatch_still_imports_with_a_warning() -> None:
    import xor_ack_dynamodb.spark as spark
    from xor_ack_dynamodb.spark import SparkTrackingError

    with pytest.warns(DeprecationWarning, match="never raised.*bad output.*Incurable"):
        cls = spark.OutputSchemaMismatch
    assert issubclass(cls, SparkTrackingError)
    with pytest.warns(DeprecationWarning):
        from xor_ack_dynamodb.spark import OutputSchemaMismatch
    assert OutputSchemaMismatch is cls
    with pytest.raises(AttributeError, match=r"xor_ack_dynamodb\.spark' has no attribute"):
        spark.NoSuchName  # noqa: B018
