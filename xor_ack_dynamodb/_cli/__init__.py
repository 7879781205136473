"""The ``xor-ack`` command line, one module per concern; ``xor_ack_dynamodb.cli`` assembles it."""
