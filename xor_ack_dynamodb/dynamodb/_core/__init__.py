"""The sans-I/O core of the DynamoDB clients, in modules named after what they hold.

Private to the DynamoDB tracker; imports the vocabulary and the tracker's
``item``, ``aws``, ``_attempts`` and ``retry``.

``effects`` (what an operation yields), ``validate`` (inputs and limits),
``client_options`` (a client's options, checked when it is made),
``expressions`` (a write as a structured value, rendered once), ``requests``
(the parameters of the writes that start and stamp a chain), ``closing_writes``
(those of the timeout, fail and delete writes), ``landing`` (landed / not landed, and the next step,
as tables), ``reads`` (cache, reads, settling a failed write), ``deadlines``
(the timeout write, touch, sweep, the inventory), ``chains`` (operations on one
chain), ``many`` (transactions; ``Chains``).
The classes stack: ``Requests`` < ``ClosingWrites`` < ``Reads`` < ``Deadlines`` <
``Endings`` < ``SingleChain`` < ``Chains``.
The clients import each name from the module that holds it.

How a stamp never lands twice
-----------------------------
botocore re-sends a request whose response was lost (connection reset, 5xx).
If the first send had landed, the re-send's condition fails, and a naive client
would re-read the item and XOR the stamp in a second time.  Here every write
carries a random write token (and the caller's idempotency tokens, if any)
that is kept in the item's ``tokens`` (the last ``token_window`` tokens),
and a failed condition returns the current item
(``ReturnValuesOnConditionCheckFailure=ALL_OLD``, with a consistent read as the
fallback where a server ignores it).  If the item holds the write's token, the
write landed: the stamp is reported applied, not re-applied.  If the token is
absent and the list still reaches back to the state the write was planned on
(the list never overflowed, or its oldest tokens are still the newest two of that
state, so every write since is in it), it did not land, which is proven, and the
stamp is retried.

What counts as ambiguous: only a request one of whose sends has an *unknown*
outcome (``_attempts`` watches botocore's ``needs-retry`` event, which sees
every send): a lost or reset connection, a read timeout, a 5xx, a 2xx that
botocore retried anyway.  A send refused with a 4xx (throttling, validation,
a failed condition) or whose connection could not be opened did not land, so a
write throttled three times and then refused by its condition is a plain lost
race, not a possible double.  When a send of unknown outcome exists, the token
is absent, and more writes landed since the planned state than the token
window holds, the client refuses to guess (``AmbiguousWrite``).  A transport
error that botocore gave up on is settled by a consistent read (unless no send
ever connected: then it is raised as proven not landed).
"""
