"""What a plan is made of: invocations in execution order (the server runner's: with a request). Both
the process plan (``sweep``) and the server plan (``serverplan``) build these, so they live below both."""

from __future__ import annotations

import shlex
from collections import Counter
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from specbench.base.formats import json_text
from specbench.plan.pairing import Pairing
from specbench.results.bracket import AFTER
from specbench.results.cell import LeftOut, label_parts
from specbench.results.records import Measurement


class CompletionRequest(BaseModel):
    """The ``POST /completion`` body, without the prompt cache (a repeat would skip prompt eval)."""

    prompt: str  # the rendered prompt text, as passed with -p (/completion applies no chat template)
    n_predict: int
    temperature: float
    seed: int
    top_k: int | None = None
    cache_prompt: bool = False
    return_tokens: bool = True
    n_probs: int = 0
    ignore_eos: bool | None = None  # not set by the plan (a run stops at EOS like the process runner)

    def body(self) -> dict:
        return self.model_dump(exclude_none=True)


class Invocation(Measurement):
    """One planned run of a llama.cpp binary; its Measurement fields become the stored Sample's."""

    warmup: bool = False
    binary_role: str  # BuildInfo role: completion | speculative_simple | speculative
    argv: list[str]  # binary path first; the prompt is passed with -p
    prompt_text: str  # exactly what the model is given (for continuation extraction)
    prompt_echoed: bool  # whether stdout starts with the prompt (speculative binaries always echo it)
    timeout_s: float
    # server runner: argv starts llama-server (equal argv: the same server); a batch is in flight together
    request: CompletionRequest | None = None
    batch: int | None = None

    def label(self) -> str:
        """Short human description, e.g. ``rep 2 speculative smol draft draft_max=8 ngl=0 ngld=0 code-01``."""
        head = f"warmup {self.repetition + 1}" if self.warmup else f"rep {self.repetition + 1}"
        if self.role == "speculative":
            what = f"speculative {self.pair} {self.method}"
        else:
            what = f"{self.role} {self.model}"
        return " ".join([head, what, *label_parts(self), self.prompt_id])

    def command_line(self, max_prompt_chars: int | None = None) -> str:
        """The shell-quoted command; ``max_prompt_chars`` shortens the prompt for display only."""
        argv = list(self.argv)
        if max_prompt_chars is not None and len(self.prompt_text) > max_prompt_chars:
            argv = [a if a != self.prompt_text else a[:max_prompt_chars] + "..." for a in argv]
        return shlex.join(argv)


class Plan(BaseModel):
    """Every invocation of a run in execution order (warmups first, flagged) plus notes for the user;
    ``runner``: the executor that must run it (a server plan's are a server and a request)."""

    runner: Literal["process", "server"]
    invocations: list[Invocation]
    notes: list[str] = Field(default_factory=list)
    left_out: list[LeftOut] = Field(default_factory=list)  # cells not run, named in the report
    server_warmup: int = 0  # server runner: discarded requests after each server start (config `warmup`)
    # the speed sentinel's reference: a short decode of the first target (specbench.machine.speed.Sentinel)
    sentinel: Invocation | None = None
    # several builds: a pair one after the other, or at once on these CPU sets (specbench.plan.pairing)
    pairing: Pairing = "sequential"
    cpu_sets: list[list[int]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_runner(self) -> Plan:
        other = {i.runner for i in self.invocations} - {self.runner}
        if other:
            raise ValueError(f"a {self.runner} plan holds {', '.join(sorted(other))} invocations")
        return self

    def only(self, invocations: list[Invocation]) -> Plan:
        """The same plan (runner, settings) over other invocations, e.g. a subset of these."""
        return self.model_copy(update={"invocations": invocations})

    def of_roles(self, roles: frozenset[str]) -> Plan:
        """Only the invocations of these roles (what ``ab``'s metrics read), with a note."""
        left = sorted({i.role for i in self.invocations} - roles)
        if not left:
            return self
        kept = self.only([i for i in self.invocations if i.role in roles])
        if not kept.measured:  # nothing the metrics read: measure all, and the gate says what it lacks
            return self
        measured = ", ".join(sorted({i.role for i in kept.invocations}))
        note = f"measured only the {measured} samples: no judged metric reads the {', '.join(left)} ones"
        kept.notes = [*self.notes, f"{note} (--metric chooses)"]
        return kept

    @property
    def measured(self) -> list[Invocation]:
        return [i for i in self.invocations if not i.warmup]

    @property
    def warmups(self) -> list[Invocation]:
        return [i for i in self.invocations if i.warmup]

    def left(self, done: set[tuple]) -> list[Invocation]:
        """What a resumed run still runs: the samples not in ``done``, and the warmups while one is."""
        todo = [i for i in self.invocations if i.warmup or i.sample_key() not in done]
        return todo if any(not i.warmup for i in todo) else []

    def describe(self, max_prompt_chars: int | None = None, limit: int | None = None) -> list[str]:
        """Lines for ``--dry-run``: a summary, the notes, each invocation's label and command."""
        roles = Counter(i.role for i in self.measured)
        lines = [
            f"# {len(self.invocations)} invocations: {len(self.warmups)} warmups, {roles['baseline']} "
            f"baseline, {roles['speculative']} speculative, {roles['draft']} draft-alone"
        ]
        if roles[AFTER]:
            lines[0] += f", {roles[AFTER]} baseline again after the speculative servers"
        lines += [f"# note: {n}" for n in self.notes]
        if self.sentinel is not None:
            lines.append("# speed sentinel (at the start, at intervals, at the end):")
            lines.append(self.sentinel.command_line(max_prompt_chars))
        server: list[str] | None = None
        for shown, inv in enumerate(self.invocations):
            if limit is not None and shown >= limit:
                lines.append(
                    f"# ... and {len(self.invocations) - shown} more invocations, left out (--all shows them)"
                )
                break
            if inv.request is None:
                lines += [f"# {inv.label()}", inv.command_line(max_prompt_chars)]
                continue
            if inv.argv != server:
                server = inv.argv
                warm = self.server_warmup
                warmups = f"{warm} warmup request{'s' if warm > 1 else ''} per start" if warm else "no warmup"
                lines += [f"# server ({inv.parallel} slot(s), {warmups}):", inv.command_line()]
            body = inv.request.body()
            if max_prompt_chars is not None and len(inv.request.prompt) > max_prompt_chars:
                body["prompt"] = inv.request.prompt[:max_prompt_chars] + "..."
            lines.append(f"# {inv.label()} (batch {inv.batch})")
            lines.append("POST /completion " + json_text(body, None, ensure_ascii=False))
        return lines
