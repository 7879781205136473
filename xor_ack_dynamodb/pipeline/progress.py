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

from .options import RoundProgress
from .report import Report, RoundResult
from .verify import Verification


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 file``, ``2 files``, ``1,000 files``."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


class RichProgress:
    """An ``Observer`` of :class:`~xor_ack_dynamodb.pipeline.job.WordCount` drawn with rich.

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
        self._files = 0
        self._acked = 0
        self._failed = 0

    def step(self, text: str) -> None:
        elapsed = time.monotonic() - self.started_at
        self.console.print(f"[{elapsed:6.1f}s] {text}", markup=False, soft_wrap=True)

    def started(self, report: Report) -> None:
        self._files = len(report.files)
        mode = "tracked" if report.tracking else "NOT tracked"
        self.step(
            f"{plural(self._files, 'file')} to count, run {report.run_id} ({mode}), "
            f"master {report.settings.get('master')}"
        )
        self._progress.start()
        self._task = self._progress.add_task("files acked", total=self._files, detail="")

    def _update(self, detail: str) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=self._acked, detail=detail)

    def round_started(self, round_: int, files: int) -> None:
        self.step(f"round {round_}: {plural(files, 'file')}")
        self._update(f"round {round_}: {plural(files, 'file')}")

    def round_progress(self, progress: RoundProgress) -> None:
        m = progress.metrics
        pending = self._files - self._acked - self._failed
        failures = (
            f", {progress.task_failures} task attempts failed" if progress.task_failures else ""
        )
        self._update(
            f"round {progress.round} | pending {pending} | failed {self._failed} | "
            f"tasks {progress.tasks_done}/{progress.tasks_total}{failures} | "
            f"split {min(m.get('files_split', 0), progress.files)}/{progress.files}"
        )

    def round_ended(self, result: RoundResult, report: Report) -> None:
        self._acked = report.acked
        self._failed = report.failed
        self._update(f"round {result.round} done")
        note = f" ({result.job_error})" if result.job_error else ""
        self.step(
            f"round {result.round}: {result.acked} acked, {result.replayed} to replay, "
            f"{result.failed} failed{note}"
        )

    def finished(self, report: Report) -> None:
        self._acked = report.acked
        self._progress.stop()
        self.console.print(summary_table(report))

    def stop(self) -> None:
        """Take the live bar down (an interruption or an error ends the run early)."""
        self._progress.stop()


#: Failed files named by name in the closing sentences; the report has them all.
NAMED_FAILURES = 5


def conclusion(report: Report, check: Verification | None = None) -> list[str]:
    """What the run proved, in sentences (the last lines of ``xor-ack wordcount``).

    ``check``: the independent count of ``--verify``, if it ran.
    """
    files = len(report.files)
    totals = report.totals
    words = (
        f"{plural(int(totals.get('words', 0)), 'word')}, "
        f"{int(totals.get('distinct_words', 0)):,} distinct"
    )
    if not report.tracking:
        return [
            f"Counted {words} in {plural(files, 'file')} without tracking (--no-tracking): "
            "nothing was verified."
        ]
    lines: list[str] = []
    acked, failed = report.acked, report.failed
    if failed == 0:
        lines.append(
            f"All {plural(files, 'file')} acked: each file's XOR chain reached zero, so every "
            f"word of every file reached the counts exactly once ({words})."
        )
    else:
        lines.append(
            f"{acked:,} of {plural(files, 'file')} acked (their words reached the counts "
            f"exactly once: {words}); {failed:,} failed and "
            f"{'is' if failed == 1 else 'are'} not in the counts:"
        )
        bad = [f for f in report.files if f.status == "failed"]
        for f in bad[:NAMED_FAILURES]:
            why = f.history[-1].outcome if f.history else "failed"
            lines.append(f"  {f.path}: {why}")
        if len(bad) > NAMED_FAILURES:
            lines.append(f"  and {len(bad) - NAMED_FAILURES:,} more (see the report)")
    crashed = sum(r.task_failures for r in report.rounds)
    metrics: dict[str, int] = {}
    for r in report.rounds:
        for key, value in r.metrics.items():
            metrics[key] = metrics.get(key, 0) + value
    lossy = metrics.get("lossy_attempts", 0)
    replayed = sum(1 for f in report.files if f.attempts > 1)
    faults = report.settings.get("crash_rate") or report.settings.get("drop_rate")
    were = plural(replayed, "file was", "files were")
    rounds = plural(len(report.rounds), "round")
    if faults:
        lines.append(
            f"Injected faults: {plural(crashed, 'task attempt')} crashed (Spark re-ran "
            f"{'it' if crashed == 1 else 'them'}) and {plural(lossy, 'attempt')} silently "
            f"lost records; the chains caught every loss: {were} replayed ({rounds})."
        )
    elif replayed:
        lines.append(f"{were} replayed ({rounds}).")
    if check is not None:
        lines.append(_verified(check))
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


def summary_table(report: Report) -> Table:
    totals = report.totals
    ddb = totals.get("dynamodb", {})
    seconds = totals.get("seconds", {})
    table = Table(title=f"xor-ack wordcount {report.run_id}", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    table.add_row("files", str(totals.get("files")))
    if report.tracking:
        table.add_row("acked", f"[green]{totals.get('acked')}[/]")
        failed = totals.get("failed", 0)
        table.add_row("failed", f"[red]{failed}[/]" if failed else "0")
        replayed = sum(1 for f in report.files if f.attempts > 1)
        table.add_row("files replayed", str(replayed))
        table.add_row("rounds", str(totals.get("rounds")))
    else:
        table.add_row("tracking", "[yellow]off: nothing verified[/]")
    table.add_row("words counted", f"{totals.get('words', 0):,}")
    table.add_row("distinct words", f"{totals.get('distinct_words', 0):,}")
    if report.tracking:
        table.add_row("DynamoDB requests", f"{ddb.get('requests', 0):,}")
        table.add_row("DynamoDB writes", f"{ddb.get('writes', 0):,}")
        table.add_row("records per write", str(ddb.get("records_per_write")))
    lost = totals.get("records_lost_to_faults", 0)
    if lost:
        table.add_row("records lost to injected faults", str(lost))
    for phase, value in seconds.items():
        table.add_row(f"seconds: {phase}", f"{value:.2f}")
    return table
