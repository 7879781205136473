"""The driver's display: files acked / pending / failed per round, then a summary table.

On a terminal it is a live progress bar; elsewhere (CI, a pipe) the live part
stays quiet and only one line per round and the final table are printed.
"""

from __future__ import annotations

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

from .job import RoundProgress
from .report import Report, RoundResult


class RichProgress:
    """An ``Observer`` of :class:`~xor_ack_dynamodb.pipeline.job.WordCount` drawn with rich."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=False,
            disable=not self.console.is_terminal,
        )
        self._task: TaskID | None = None
        self._files = 0
        self._acked = 0
        self._failed = 0
        self._round_files = 0

    def started(self, report: Report) -> None:
        self._files = len(report.files)
        mode = "tracked" if report.tracking else "NOT tracked"
        self.console.print(
            f"xor-ack wordcount: {self._files} files, run {report.run_id} ({mode}), "
            f"master {report.settings.get('master')}"
        )
        self._progress.start()
        self._task = self._progress.add_task("files acked", total=self._files, detail="")

    def _update(self, detail: str) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=self._acked, detail=detail)

    def round_started(self, round_: int, files: int) -> None:
        self._round_files = files
        self._update(f"round {round_}: {files} files")

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
        pending = self._files - self._acked - self._failed
        self._update(f"round {result.round} done | pending {pending} | failed {self._failed}")
        note = f" ({result.job_error})" if result.job_error else ""
        line = (
            f"round {result.round}: {result.files} files -> {result.acked} acked, "
            f"{result.replayed} to replay, {result.failed} failed{note}"
        )
        if self.console.is_terminal:
            self._progress.console.print(line)
        else:
            self.console.print(line)

    def finished(self, report: Report) -> None:
        self._acked = report.acked
        self._update("done")
        self._progress.stop()
        self.console.print(summary_table(report))


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
