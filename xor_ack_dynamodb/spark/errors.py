"""Errors of the Spark library that a user can act on (all are :class:`SparkTrackingError`)."""

from __future__ import annotations

from ..errors import XorAckError


class SparkTrackingError(XorAckError):
    """A tracked Spark job cannot go on as asked; the message says why and what to do."""


class Refused(SparkTrackingError):
    """The run was refused before anything was read or written."""


class InputMissing(Refused):
    """The input folder does not exist (or is a broken symbolic link)."""


class InputEmpty(Refused):
    """The input folder holds no file to process."""


class OutputExists(Refused):
    """The output exists and is not empty, and the sink was not asked to overwrite it
    (``Sink(overwrite=True)``)."""


class OutputNotOurs(Refused):
    """Overwrite was asked, but the output is not a folder this library wrote (or holds more)."""


class TrackingNotConfigured(SparkTrackingError):
    """No chains table was named (argument, session conf or environment)."""


class RemoteFilesUnsupported(SparkTrackingError):
    """Staging and committing a Hadoop URI needs the JVM, which Spark Connect does not expose."""


class OutputSchemaMismatch(SparkTrackingError):
    """The user's function returned columns that do not fit the declared output schema."""


class BatchFailed(SparkTrackingError):
    """A micro-batch of a tracked stream ended with inputs that failed (the query stops)."""


class InputRejected(SparkTrackingError):
    """Raised by the user's function: this input can never be processed (e.g. not UTF-8).

    The input ends ``failed`` at once with the message as its reason, and is not
    replayed: the same bytes would be rejected again.  Its chain is closed with
    that reason; the other inputs of the round are not affected.
    """


class InputsInterleaved(SparkTrackingError):
    """A task's rows of one input were not contiguous: its round fails rather than
    run the user's function twice over parts of one input."""


class RoundTimedOut(SparkTrackingError):
    """A round's Spark jobs ran past the per-round timeout and were cancelled."""
