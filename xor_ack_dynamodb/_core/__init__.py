"""The sans-I/O core of the DynamoDB clients, in modules named after what they hold.

``landing`` is the landed / not-landed decision as tables; ``xor_ack_dynamodb._ops``
runs the operations and re-exports the names the clients import.
"""
