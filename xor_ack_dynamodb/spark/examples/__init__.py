"""Jobs built on :func:`xor_ack_dynamodb.spark.track`: the word count, a per-file ETL."""
