"""infra/fleet.yaml's SQS event sources against Lambda's rules: each queue a function reads
hides a message at least six times that function's timeout (the template gives ten).

Lambda refuses ``CreateEventSourceMapping`` for an SQS queue whose visibility timeout is
below the function's timeout (``InvalidParameterValueException: Queue visibility timeout:
30 seconds is less than Function timeout: 60 seconds``), and a message visible again while
its function still runs is handled twice at once.  moto does not enforce this, so the
template is read and resolved here.  The dead-letter queue kept SQS's default 30 s.
"""

from __future__ import annotations

from .cfn import ROOT, Resolver, load_template

FLEET = ROOT / "infra" / "fleet.yaml"

#: SQS's VisibilityTimeout for a queue that does not set one.
SQS_DEFAULT_VISIBILITY = 30


def _sqs_mappings(function_timeout: str | None = None) -> dict[str, tuple[int, int]]:
    """Each SQS queue that feeds a function: (its visibility timeout, the function's timeout)."""
    parameters = {"CodeBucket": "b", "CodeKey": "k"}
    if function_timeout is not None:
        parameters["FunctionTimeout"] = function_timeout
    resolver = Resolver(load_template(FLEET), **parameters)
    resources = resolver.template["Resources"]
    found = {}
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Lambda::EventSourceMapping":
            continue
        mapping = resolver.resource(name)["Properties"]
        queue_name = str(mapping["EventSourceArn"]).removesuffix(".Arn")
        if resources.get(queue_name, {}).get("Type") != "AWS::SQS::Queue":
            continue  # the stream's mapping
        queue = resolver.resource(queue_name)["Properties"]
        visibility = int(queue.get("VisibilityTimeout", SQS_DEFAULT_VISIBILITY))
        function = resolver.resource(str(mapping["FunctionName"]).removeprefix("Ref:"))
        found[queue_name] = (visibility, int(function["Properties"]["Timeout"]))
    assert set(found) == {"WorkQueue", "DeadLetterQueue"}
    return found


def test_the_dead_letter_mapping_takes_a_function_timeout_over_30s() -> None:
    """FunctionTimeout=60 (allowed: 3..900) gives the dead-letter function a 60 s timeout:
    with SQS's default 30 s visibility on its queue, CreateEventSourceMapping fails and the
    whole stack rolls back."""
    mappings = _sqs_mappings("60")
    refused = {q: vt for q, vt in mappings.items() if vt[0] < vt[1]}
    assert refused == {}, f"(visibility, function timeout) below 1x: {refused}"


def test_every_sqs_mapped_queue_hides_a_message_six_times_its_function_s_timeout() -> None:
    """With the defaults the stack deploys (30 s = 30 s), but a dead letter can become
    visible again while the dead-letter function still handles it (the poller's receive
    precedes the invocation), and runs twice at once: docs/fleet.md promises ten times."""
    mappings = _sqs_mappings()
    short = {q: vt for q, vt in mappings.items() if vt[0] < 6 * vt[1]}
    assert short == {}, f"(visibility, function timeout) below 6x: {short}"
