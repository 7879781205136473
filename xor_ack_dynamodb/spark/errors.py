"""Errors of the Spark library that a user can act on (all are :class:`PipelineError`)."""

from __future__ import annotations

from ..pipeline.errors import PipelineError


class TrackingNotConfigured(PipelineError):
    """No chains table was named (argument, session conf or environment)."""


class RemoteFilesUnsupported(PipelineError):
    """Staging and committing a Hadoop URI needs the JVM, which Spark Connect does not expose."""


class OutputSchemaMismatch(PipelineError):
    """The user's function returned columns that do not fit the declared output schema."""


class BatchFailed(PipelineError):
    """A micro-batch of a tracked stream ended with inputs that failed (the query stops)."""


class InputRejected(PipelineError):
    """Raised by the user's function: this input can never be processed (e.g. not UTF-8).

    The input ends ``failed`` at once with the message as its reason, and is not
    replayed: the same bytes would be rejected again.  Its chain is closed with
    that reason; the other inputs of the round are not affected.
    """


class InputsInterleaved(PipelineError):
    """A task's rows of one input were not contiguous: its round fails rather than
    run the user's function twice over parts of one input."""


class RoundTimedOut(PipelineError):
    """A round's Spark jobs ran past the per-round timeout and were cancelled."""
