"""The sans-I/O core of the DynamoDB clients, in modules named after what they hold.

``effects`` (what an operation yields), ``validate`` (inputs and limits),
``expressions`` (a write as a structured value, rendered once), ``requests``
(each write's parameters), ``landing`` (landed / not landed, and the next step,
as tables), ``reads`` (cache, reads, settling a failed write), ``deadlines``
(the timeout write, touch, sweep, the inventory), ``chains`` (operations on one
chain), ``many`` (transactions; ``Chains``).
The classes stack: ``Requests`` < ``Reads`` < ``Deadlines`` < ``SingleChain`` < ``Chains``.
``xor_ack_dynamodb._ops`` re-exports the names the clients import.
"""
