"""Jobs built on :func:`xor_ack_dynamodb.spark.track`: the word count, a per-file ETL.

Part of ``spark``; they import its public API, as a user's job would.
"""
