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
