"""A bad input fails alone: its errors counted, the inputs of a dead task isolated, and the
errors no replay cures recognised after one round.

Inside a task (``sandbox``), an exception from the user's function for one input
closes that input's chain with a reason that names the input, the exception's type
and its message (``raised: ValueError: bad input (input k7)``); the task goes on
with its other inputs, which commit in the same round.  On the driver
(:class:`Isolation`):

- an input whose function raised (or returned no table, or ended its process) is
  replayed until it has done so ``max_errors`` times, then it is failed with that
  reason;
- a round whose Spark job failed (a Python worker that died takes its whole task
  with it, and on a master without task retries the whole job) leaves some inputs
  whose function never returned.  In the next round those of the task that failed
  the job (Spark's message names it; the inputs' task is ``pmod(murmur3(id), tasks)``,
  as ``repartition`` placed them) each run in a child process of its own
  (``sandbox``), so that one that kills its process again fails alone
  (``crashed: ...``) and the others commit.  Should that round fail too (or the
  message name no task), every input whose function did not return is isolated in
  the next.  Healthy inputs are acked within two rounds of the crash, however often
  the bad one crashes;
- a round in which every input failed with the same error that no replay cures (a
  module missing where the tasks run, a Python the executors cannot start, a
  function that returns no table) stops the run with one message saying what to
  install or fix, and where (:func:`incurable`).
"""

from __future__ import annotations

import pickle
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .errors import InvalidArgument

#: The reasons a task gives a chain when the user's function failed for its input.
RAISED = "raised: "
CRASHED = "crashed: "
BAD_OUTPUT = "bad output: "
_RETRYABLE = (RAISED, CRASHED, BAD_OUTPUT)
#: Longest exception message kept in a reason.
_MESSAGE = 300

_MISSING = re.compile(r"(ModuleNotFoundError|ImportError): (No module named '?([\w.]+)'?[^\n]*)")
_IMPORT = re.compile(r"ImportError: ([^\n]+)")
#: botocore's refusal to make a request at all where the tasks run: no region (the driver
#: found its own in its ~/.aws, the executors have none).  Not ``NoCredentialsError``: an
#: instance metadata service that does not answer for a moment says that too.
_NO_AWS_SETTING = re.compile(r"(?:botocore\.exceptions\.)?(NoRegionError): [^\n]*")
#: A worker's Python that is not there (error=2, ENOENT) or may not run (error=13, EACCES):
#: not a fork that failed for a moment (error=12 ENOMEM, 11 EAGAIN, 24 EMFILE: replayed).
_NO_PROGRAM = re.compile(r'Cannot run program "([^"]+)"[^\n]*?error=(?:2|13),[^\n]*')
_FAILED_TASK = re.compile(r"Task (\d+) in stage [\d.]+ failed")
_VERSION = re.compile(r"PYTHON_VERSION_MISMATCH[^\n]*|Python in worker has different version[^\n]*")
#: The driver's SparkSession or SparkContext used where the tasks run: in the function, or in
#: a module it imports that makes a session when imported.
_DRIVER_ONLY = re.compile(r"CONTEXT_ONLY_VALID_ON_DRIVER")
#: DynamoDB refusing the tasks' requests for good: their credentials, or the table where they
#: look (throttles, 5xx and a network that fails for a while are replayed).
_REFUSED = re.compile(
    r"An error occurred \((AccessDeniedException|UnrecognizedClientException|"
    r"InvalidSignatureException|MissingAuthenticationTokenException|ResourceNotFoundException)"
    r"\) when calling the (\w+) operation:? ?([^\n]*)"
)


def one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " / ".join(lines)[:_MESSAGE] if lines else ""


def raised(key: str, error: BaseException | tuple[str, str]) -> str:
    """The reason of an input whose function raised ``error`` (or its ``(type, message)``)."""
    kind, message = error if isinstance(error, tuple) else (type(error).__name__, message_of(error))
    line = one_line(message)
    return f"{RAISED}{kind}{f': {line}' if line else ''} (input {key})"


def message_of(error: BaseException) -> str:
    """``str(error)``, or what can be said of it when its own ``__str__`` fails."""
    try:
        return str(error)
    except Exception as failed:
        return f"<its message could not be made: {type(failed).__name__}: {failed}>"


def crashed(key: str, how: str) -> str:
    """The reason of an input whose function ended the process it ran in."""
    return f"{CRASHED}the function ended its Python process ({how}) (input {key})"


def bad_output(key: str, what: str) -> str:
    """The reason of an input whose function returned something that is not its rows."""
    return f"{BAD_OUTPUT}{what} (input {key})"


def retryable(reason: str | None) -> bool:
    """A chain the task closed because the function failed (not ``InputRejected``)."""
    return bool(reason) and str(reason).startswith(_RETRYABLE)


class Isolation:
    """Per input: how often its function failed, and whether it runs in a process of its own."""

    def __init__(self, max_errors: int) -> None:
        if max_errors < 1:
            raise InvalidArgument("max_errors must be >= 1")
        self.max_errors = max_errors
        self.errors: Counter[int] = Counter()
        self.isolated: set[int] = set()
        #: A failed round isolated only the inputs of the task that failed it.
        self.narrowed = False

    def for_round(self, pending: Iterable[int]) -> frozenset[int]:
        """The inputs of the coming round that run in a child process each."""
        return frozenset(i for i in pending if i in self.isolated)

    def spent(self, i: int, outcome: str) -> bool:
        """Count ``outcome`` if the function failed; True once input ``i`` is out of tries."""
        if not retryable(outcome):
            return False
        self.errors[i] += 1
        if outcome.startswith(CRASHED):
            self.isolated.add(i)
        return self.errors[i] >= self.max_errors

    def round_failed(
        self,
        pending: Sequence[int],
        returned: set[int],
        error: str = "",
        task_of: Callable[[list[int]], Mapping[int, int]] | None = None,
    ) -> None:
        """A round's job failed: isolate the inputs whose function never returned.

        The first time, only those of the task that failed the job (``error`` names
        it; ``task_of`` says which task each input was in), if any; else all of them.
        """
        suspects = [i for i in pending if i not in returned]
        found = _FAILED_TASK.search(error)
        if found is not None and task_of is not None and not self.narrowed and suspects:
            dead = int(found.group(1))
            tasks = task_of(suspects)
            narrow = [i for i in suspects if tasks.get(i) == dead]
            if narrow:
                self.narrowed = True
                self.isolated.update(narrow)
                return
        self.isolated.update(suspects)

    @staticmethod
    def stop(entries: Sequence[Any], message: str) -> list[int]:
        """The inputs left fail with an incurable round's ``message``; no round follows."""
        for entry in entries:
            entry.status = "failed"
            entry.history.append(f"stopped: {message}")
        return []


def returned(
    pending: Sequence[int],
    tags: Sequence[str],
    states: Mapping[str, Any],
    created: Mapping[str, bytes | None],
) -> set[int]:
    """The inputs of a failed round whose function returned (or raised): their task stamped
    the chain (a version past the created one's) or closed it."""
    done: set[int] = set()
    for i, tag in zip(pending, tags, strict=True):
        state, known = states.get(tag), created.get(tag)
        before = pickle.loads(known).version if known is not None else 1
        if state is not None and (state.failed or state.version > before):
            done.add(i)
    return done


def output_at_fault(outcomes: Sequence[str]) -> bool:
    """Did every input fail for what the function returned for it (no rows table)?  Then
    the inputs' own results are at fault, not where the tasks run."""
    return bool(outcomes) and all(o.startswith(BAD_OUTPUT) for o in outcomes)


def incurable(job_error: str | None, outcomes: Sequence[str], acked: int, where: str) -> str | None:
    """The message that stops the run, if every input failed with an error no replay cures.

    ``job_error``: the round's failed Spark job's text (None if it ran); ``outcomes``:
    each input's outcome; ``where``: who runs the tasks ("the workers", "the Spark
    Connect server's workers").
    """
    if acked or not outcomes:
        return None
    if job_error is not None:
        return _setup_problem(job_error, where)
    if not all(retryable(o) for o in outcomes):
        return None
    if output_at_fault(outcomes):
        return (
            f"the function's output was refused for every input "
            f"({outcomes[0][len(BAD_OUTPUT) :]}): "
            "fix the function (in the job's code, on the client) to return a pyarrow.Table "
            "with the declared columns"
        )
    missing = [_MISSING.search(o) for o in outcomes]
    names = {m.group(3) for m in missing if m is not None}
    if all(m is not None for m in missing) and len(names) == 1:
        name = names.pop()
        return (
            f"the function cannot import {name!r} on {where} (every input: "
            f"{outcomes[0][len(RAISED) :]}): install {name} into the Python that runs the "
            "tasks there (spark.pyspark.python / PYSPARK_PYTHON)"
        )
    imports = [_IMPORT.search(o) for o in outcomes]  # "cannot import name ...": a version
    said = {m.group(1).rsplit(" (input ", 1)[0] for m in imports if m is not None}
    if all(m is not None for m in imports) and len(said) == 1:
        return (
            f"the function cannot import what it needs on {where} (every input: "
            f"{outcomes[0][len(RAISED) :]}): install matching versions into the Python that "
            "runs the tasks there (spark.pyspark.python / PYSPARK_PYTHON)"
        )
    return None


def _setup_problem(text: str, where: str) -> str | None:
    """What a failed job's text says cannot heal: a module, a Python, a version, DynamoDB
    refusing the tasks' credentials or not finding the table where they look."""
    found = _MISSING.search(text)
    if found is not None:
        name = found.group(3).split(".")[0]
        what = "the library itself" if name == "xor_ack_dynamodb" else f"module {name!r}"
        return (
            f"the tasks cannot import {what} on {where} ({found.group(1)}: {found.group(2)}): "
            f"install it into the Python that runs the tasks there (spark.pyspark.python / "
            f"PYSPARK_PYTHON){_install_hint(name)}"
        )
    found = _NO_PROGRAM.search(text)
    if found is not None:
        return (
            f"{where} cannot start Python {found.group(1)!r} ({one_line(found.group(0))}): set "
            "spark.pyspark.python / PYSPARK_PYTHON there to an interpreter that exists on "
            "every worker"
        )
    found = _VERSION.search(text)
    if found is not None:
        return (
            f"the Python on {where} is not the driver's version ({one_line(found.group(0))}): "
            "run the same Python minor version on both sides"
        )
    if _DRIVER_ONLY.search(text) is not None:
        return (
            f"the tasks use a SparkSession or SparkContext on {where} "
            "(CONTEXT_ONLY_VALID_ON_DRIVER), which only the driver has: keep Spark out of the"
            " function, and out of what the module it lives in runs when it is imported (make"
            ' the session under `if __name__ == "__main__":`)'
        )
    found = _REFUSED.search(text)
    if found is not None:
        code, operation, detail = found.groups()
        said = f"{code} on {operation}" + (f": {one_line(detail)[:300]}" if detail else "")
        return (
            f"DynamoDB refuses the tasks' requests on {where} ({said}): give the credentials "
            "the tasks run with there the chains table's policy (infra/table.yaml), and the "
            "table's region and endpoint"
        )
    found = _NO_AWS_SETTING.search(text)
    if found is not None:
        return (
            f"the tasks cannot reach DynamoDB on {where} ({one_line(found.group(0))}): give"
            " them the chains table's region (TrackerConfig(region=...), the spark.xorack.region"
            " setting, or AWS_REGION where they run)"
        )
    found = _IMPORT.search(text)
    if found is not None:
        return (
            f"the tasks cannot import what they need on {where} (ImportError: "
            f"{one_line(found.group(1))}): install matching versions into the Python that "
            "runs the tasks there"
        )
    return None


def _install_hint(name: str) -> str:
    from .paths import PACKAGE, package_version

    if name != "xor_ack_dynamodb":
        return ""
    version = package_version()
    pinned = f"=={version}" if version != "unknown" else ""
    return f": pip install {PACKAGE}{pinned} pyarrow pandas"


def task_of(ids: Iterable[int], tasks: int) -> dict[int, int]:
    """The task each input id went to: ``repartition(tasks, id)``'s hash partitioning,
    ``pmod(murmur3(id, seed 42), tasks)``, computed here (no Spark job: the workers may be
    what failed)."""
    return {i: _murmur3_int(i) % tasks for i in ids}


def _murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``Murmur3_x86_32.hashInt`` (the hash of an int column), as a signed int."""
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    k1 = rotl((value & mask) * 0xCC9E2D51 & mask, 15) * 0x1B873593 & mask
    h1 = (rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & mask
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & mask
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & mask
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1
