"""The driver's display: files acked / pending / failed per round, then a summary table.

On a terminal it is a live progress bar; elsewhere (CI, a pipe) the live part
stays quiet and only one line per round and the final table are printed.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from ..spark.report import InputResult, RoundSummary, TrackedReport
from .verify import Verification


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 file``, ``2 files``, ``1,000 files``."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


class RichProgress:
    """A :class:`~xor_ack_dynamodb.spark.RoundObserver` of the word count, drawn with rich.

    One line per step, each with the time since ``started_at`` (the command's
    start, so Spark's start-up is in it); on a terminal a live bar as well.
    """

    def __init__(self, console: Console | None = None, started_at: float | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False)
        self.started_at = time.monotonic() if started_at is None else started_at
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
            disable=not self.console.is_terminal,
        )
        self._task: TaskID | None = None

    def step(self, text: str) -> None:
        elapsed = time.monotonic() - self.started_at
        self.console.print(f"[{elapsed:6.1f}s] {text}", markup=False, soft_wrap=True)

    def started(self, report: TrackedReport) -> None:
        files = report.expected if report.expected is not None else report.listed
        mode = "tracked" if report.tracking else "NOT tracked"
        self.step(
            f"{plural(files, 'file')} to count, run {report.run_id} ({mode}), "
            f"master {report.settings.get('master')}"
        )
        self._progress.start()
        self._task = self._progress.add_task("files acked", total=files, detail="")

    def _update(self, acked: int, detail: str) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=acked, detail=detail)

    def round_started(self, round_: int, inputs: int) -> None:
        self.step(f"round {round_}: {plural(inputs, 'file')}")
        if self._task is not None:
            self._progress.update(self._task, detail=f"round {round_}: {plural(inputs, 'file')}")

    def round_ended(self, summary: RoundSummary, report: TrackedReport) -> None:
        self._update(report.acked, f"round {summary.round} done")
        note = f" ({summary.job_error})" if summary.job_error else ""
        self.step(
            f"round {summary.round}: {summary.acked} acked, {summary.replayed} to replay, "
            f"{summary.failed} failed{note}"
        )

    def finished(self, report: TrackedReport) -> None:
        self._progress.stop()
        self.console.print(summary_table(report))

    def stop(self) -> None:
        """Take the live bar down (an interruption or an error ends the run early)."""
        self._progress.stop()


#: Failed files named by name in the closing sentences; the report has them all.
NAMED_FAILURES = 5


def conclusion(report: TrackedReport, check: Verification | None = None) -> list[str]:
    """What the run proved, in sentences (the last lines of ``xor-ack wordcount``).

    ``check``: the independent count of ``--verify``, if it ran.
    """
    files = report.listed
    totals = report.totals
    words = (
        f"{plural(int(totals.get('words', 0)), 'word')}, "
        f"{int(totals.get('distinct_words', 0)):,} distinct"
    )
    bad = report.failed
    if not report.tracking:
        counted = plural(files - len(bad), "file")
        untracked = f"Counted {words} in {counted} without tracking (--no-tracking)"
        lines = [
            f"{untracked}: {'nothing was verified' if check is None else 'no chain verified it'}."
        ]
        if bad:
            lines.append(
                f"{len(bad):,} failed and {'is' if len(bad) == 1 else 'are'} not in the counts:"
            )
            lines.extend(_named(bad))
        return lines if check is None else [*lines, _verified(check)]
    lines = []
    if report.output_state == "kept":
        lines.append(
            f"{report.acked:,} of {plural(files, 'file')} acked and {len(bad):,} failed: "
            f"{report.output} was kept as it was (--overwrite replaces it only when every file "
            "was acked), so this run's counts were not written:"
        )
        lines.extend(_named(bad))
    elif not bad:
        lines.append(
            f"All {plural(files, 'file')} acked: each file's XOR chain reached zero, so every "
            f"word of every file reached the counts exactly once ({words})."
        )
    else:
        lines.append(
            f"{report.acked:,} of {plural(files, 'file')} acked (their words reached the counts "
            f"exactly once: {words}); {len(bad):,} failed and "
            f"{'is' if len(bad) == 1 else 'are'} not in the counts:"
        )
        lines.extend(_named(bad))
    were = plural(report.replayed, "file was", "files were")
    rounds = plural(len(report.rounds), "round")
    settings = report.settings
    if settings.get("crash_rate") or settings.get("drop_rate"):
        lines.append(
            f"Injected faults (task attempts crash at rate {settings.get('crash_rate', 0):g} and "
            f"silently lose records at rate {settings.get('drop_rate', 0):g}, seed "
            f"{settings.get('seed')}): Spark re-ran the crashed attempts and the chains caught "
            f"every loss: {were} replayed ({rounds})."
        )
    elif report.replayed:
        lines.append(f"{were} replayed ({rounds}).")
    if report.chains_failed:  # what a dashboard then shows, even when every file acked
        lines.append(
            f"{plural(report.chains_failed, 'chain')} ended failed, one per attempt that did not"
            " ack (a replay runs under a new chain): a dashboard of the table counts them."
        )
    if check is not None:
        lines.append(_verified(check))
    return lines


def _named(bad: list[InputResult]) -> list[str]:
    """The first failed files, each with why, and how many more."""
    lines = [f"  {f.key}: {f.history[-1] if f.history else 'failed'}" for f in bad[:NAMED_FAILURES]]
    if len(bad) > NAMED_FAILURES:
        lines.append(f"  and {len(bad) - NAMED_FAILURES:,} more (see the report)")
    return lines


def _verified(check: Verification) -> str:
    """The sentence on ``--verify``'s independent count."""
    if not check.checked:
        return f"Not verified: {check.detail}."
    if not check.ok:
        return f"Verification FAILED: {check.detail}."
    return (
        f"Verified: {plural(check.files, 'finished file')} counted again in plain Python, "
        f"without Spark or chains, give exactly the counts in the output "
        f"({plural(check.words, 'word')}, {check.distinct:,} distinct)."
    )


def summary_table(report: TrackedReport) -> Table:
    totals = report.totals
    table = Table(title=f"xor-ack wordcount {report.run_id}", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    table.add_row("files", str(report.listed))
    if report.tracking:
        table.add_row("acked", f"[green]{report.acked}[/]")
        failed = report.failed_count
        table.add_row("failed", f"[red]{failed}[/]" if failed else "0")
        table.add_row("files replayed", str(report.replayed))
        table.add_row("rounds", str(len(report.rounds)))
    else:
        table.add_row("tracking", "[yellow]off: nothing verified[/]")
    if report.output_state == "kept":
        table.add_row("counts", "[yellow]none written: the former output kept[/]")
    else:
        table.add_row("words counted", f"{totals.get('words', 0):,}")
        table.add_row("distinct words", f"{totals.get('distinct_words', 0):,}")
    if report.tracking:
        table.add_row("DynamoDB writes on the chains", f"{report.chain_writes:,}")
        per = report.writes_per_input
        table.add_row("writes per file", f"{per:.2f}" if per is not None else "-")
    for phase, value in report.seconds.items():  # from track()'s start: Spark's not in it
        said = "total, after Spark started" if phase == "total" else phase
        table.add_row(f"seconds: {said}", f"{value:.2f}")
    return table
