"""A local DynamoDB in three parts; ``xor_ack_dynamodb.local`` is their public face."""
