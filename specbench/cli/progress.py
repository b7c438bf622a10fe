"""Progress on stderr while llama.cpp runs: the samples as a bar or plain lines, the build and model steps."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specbench.cli.common import err_console, say

if TYPE_CHECKING:
    from rich.progress import TaskID


class ProgressView:
    """A rich bar with ETA and the last t/s on a terminal, one line per sample elsewhere (logs, CI)."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.tty = err_console.is_terminal
        self.bar: Any = None
        self.task: Any = None
        self.skipped = 0

    def __call__(self, event: Any) -> None:
        if self.quiet:
            return
        if self.tty:
            self._bar(event)
        elif event.kind in ("sample", "warmup", "dropped"):
            say(self._describe(event), err=True)

    def _bar(self, event: Any) -> None:
        from rich import progress as rp

        if event.kind == "start" and self.bar is not None:  # repetitions: auto planned another round
            self.bar.update(self.task, total=event.total - self.skipped)
            return
        if event.kind == "start":
            self.bar = rp.Progress(
                rp.TextColumn("{task.description}"), rp.BarColumn(), rp.MofNCompleteColumn(),
                rp.TimeElapsedColumn(), rp.TextColumn("ETA"), rp.TimeRemainingColumn(),
                rp.TextColumn("{task.fields[tps]}"), console=err_console, transient=True,
            )  # fmt: skip
            done = max(event.done - self.skipped, 0)  # a later round of repetitions: auto goes on from here
            self.task = self.bar.add_task("running", total=event.total - self.skipped, completed=done, tps="")
            self.bar.start()
            return
        if self.bar is None:
            return
        if event.kind == "dropped":
            say(self._describe(event), err=True)
        elif event.kind == "skipped":
            self.skipped += 1
            self.bar.update(self.task, total=event.total - self.skipped)
        elif event.kind == "begin":
            self.bar.update(self.task, description=event.invocation.label()[:60])
        else:
            tps = f"last {event.last_tps:.1f} t/s" if event.last_tps is not None else ""
            self.bar.update(self.task, advance=1, tps=tps)
            if event.sample is not None and event.sample.status != "ok":
                say(self._describe(event), err=True)
        if event.done >= event.total:
            self.stop()

    def _describe(self, event: Any) -> str:
        if event.kind == "dropped":
            return f"[{event.done}/{event.total}] {event.message}"
        s = event.sample
        what = event.invocation.label()
        if s is None or (event.kind == "warmup" and s.status == "ok"):
            return f"[{event.done}/{event.total}] {what}: done"
        if s.status != "ok":
            return f"[{event.done}/{event.total}] {what}: {s.status.upper()}: {s.invalid_reason}"
        tps = "-" if s.tps is None else f"{s.tps:.2f}"
        extra = f", acceptance {s.acceptance:.0%}" if s.acceptance is not None else ""
        return f"[{event.done}/{event.total}] {what}: {tps} t/s{extra}"

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def print_step(p: Any) -> None:
    """A build or model step, one line (their progress percentages are left out)."""
    if getattr(p, "done", None) is None:
        say(f"{p.phase}: {p.message}", err=True)


class DownloadBars:
    """The models stage's ``progress(label, done, total)``: a byte bar per download, a line per step."""

    def __init__(self) -> None:
        from rich import progress as rp

        columns = (rp.BarColumn(), rp.DownloadColumn(), rp.TransferSpeedColumn(), rp.TimeElapsedColumn())
        self.bar = rp.Progress(
            rp.TextColumn("{task.description}"), *columns, console=err_console, transient=True
        )
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, label: str, done: int, total: int | None) -> None:
        if total is None:
            err_console.print(f"[dim]{label}[/dim]", highlight=False, soft_wrap=True)
            return
        if not self.tasks:
            self.bar.start()
        if label not in self.tasks:
            self.tasks[label] = self.bar.add_task(label[-60:], total=total)
        self.bar.update(self.tasks[label], completed=done, total=total)

    def stop(self) -> None:
        self.bar.stop()
