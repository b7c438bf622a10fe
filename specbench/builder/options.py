"""The llama.cpp options a user tunes (``specbench.base.llamaopts``) as each binary spells them.

The probe records each binary's spelling from its ``--help`` (``OptionFlag``); ``option_argv`` turns
a value into that binary's arguments and refuses one it cannot take (no such option, an unlisted value).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from specbench.base.llamaopts import BY_KEY, TUNED, LlamaOption

# Before -lm (2026), loading was two switches: each mode as those switches (None: no such mode).
_OLD_LOAD = {"auto": [], "mmap": [], "none": ["--no-mmap"], "mlock": ["--no-mmap", "--mlock"],
             "mmap+mlock": ["--mlock"], "dio": None}  # fmt: skip


class OptionFlag(BaseModel):
    """How one binary spells one option: the switch or value option, and what its help lists."""

    flag: str  # the spelling to pass (e.g. -fa); for a toggle, its positive switch or ""
    off: str | None = None  # a toggle's negative switch (-nkvo)
    takes_value: bool = True  # False: an old on-only switch (-fa before it took on|off|auto)
    values: list[str] = Field(default_factory=list)  # values the help lists (cache types, split modes)
    old_load: list[str] = Field(default_factory=list)  # --no-mmap / --mlock (builds without -lm)
    default: str | None = None  # what its help gives as the default ("enabled", "auto", "4096"...)


def _listed(description: str) -> list[str]:
    """``allowed values: f32, f16, q8_0`` or ``{none,layer,row}`` / ``[on|off|auto]`` in a help entry."""
    m = re.search(r"allowed values:\s*([\w.+-]+(?:,\s*[\w.+-]+)+)", description)
    return [v.strip() for v in m.group(1).split(",")] if m else []


def _metavar_values(metavar: str) -> list[str]:
    parts = [v for v in re.split(r"[|,/]", metavar.strip("[]{}<>()")) if v]
    return parts if len(parts) > 1 and all(re.match(r"^[\w.+-]+$", v) for v in parts) else []


def probe_options(usable: dict, options: tuple[LlamaOption, ...] = TUNED) -> dict[str, OptionFlag]:
    """Each option's spelling in one binary (``usable``: help entries by name, removed ones left out)."""
    found: dict[str, OptionFlag] = {}
    for opt in options:
        name = next((s for s in opt.spellings if s in usable), None)
        off = next((s for s in opt.off if s in usable), None)
        if opt.kind == "load_mode" and name is None:
            old = [s for s in ("--no-mmap", "--mlock") if s in usable]
            if old:
                found[opt.key] = OptionFlag(flag="", takes_value=False, old_load=old)
            continue
        if name is None and off is None:
            continue
        entry = usable[name] if name else usable[off]
        values = _listed(" ".join(entry.description)) or _metavar_values(entry.metavar)
        takes = bool(entry.metavar) and opt.kind != "toggle"
        said = re.search(r"\(default:\s*([^()]*?)\s*\)", " ".join(entry.description))
        found[opt.key] = OptionFlag(
            flag=name or "", off=off, takes_value=takes, values=values, default=said[1] if said else None
        )
    return found


_SAID_ON = {
    **dict.fromkeys(("enabled", "on", "true", "1"), True),
    **dict.fromkeys(("disabled", "off", "false", "0"), False),
}


def default_on(flag: OptionFlag | None) -> bool | None:
    """A toggle's default as its help says it; None when the binary has no such option or says
    nothing readable."""
    return _SAID_ON.get((flag.default or "").lower()) if flag is not None else None


class OptionError(ValueError):
    """A value the binary cannot take; the message names the flag and what to do."""


def _text(value: object) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def option_argv(spelling: dict[str, OptionFlag] | None, key: str, value: object, binary: str) -> list[str]:
    """The arguments that give ``key`` the value ``value`` in a binary that spells its options as
    ``spelling`` (its probed --help); OptionError when it cannot."""
    if value is None:
        return []
    opt = BY_KEY[key]
    flag = (spelling or {}).get(key)
    if flag is None:
        raise OptionError(
            f"{binary} of this build has no option for {key} ({opt.spellings[0]}); "
            f"remove {key} from the config or build a newer llama.cpp"
        )
    if opt.kind == "toggle":
        if value:
            return [flag.flag] if flag.flag else []  # on is every build's default when only -nkvo exists
        if not flag.off:
            raise OptionError(f"{binary} of this build cannot turn {key} off (no {opt.off[0]})")
        return [flag.off]
    if opt.kind == "load_mode" and not flag.flag:
        old = _OLD_LOAD.get(str(value))
        if old is None or any(s not in flag.old_load for s in old):
            raise OptionError(
                f"{binary} of this build has no -lm/--load-mode, and load_mode {value} has no "
                f"older spelling; use one of auto, none, mmap, mlock, mmap+mlock"
            )
        return old
    text = _text(value)
    if opt.kind == "tristate" and not flag.takes_value:  # an old on-only switch
        if text == "on":
            return [flag.flag]
        if text == "off":
            return []
        raise OptionError(f"{binary} of this build takes {flag.flag} as a switch (on or off), not {text}")
    if flag.values and text not in flag.values and opt.listed:
        raise OptionError(
            f"{key}: {binary} of this build does not take {text!r} (it lists: {', '.join(flag.values)})"
        )
    return [flag.flag, text]


def bench_argv(spelling: dict[str, OptionFlag] | None, values: dict[str, object]) -> list[str]:
    """The same options as llama-bench test parameters (its own spellings: -fa on|off or 0|1,
    -nkvo 0|1, --repack 0|1, several tensor splits and overrides with ``/`` and ``;``)."""
    argv: list[str] = []
    for key, value in values.items():
        opt = BY_KEY[key]
        if value is None or opt.draft:
            continue
        if opt.bench is None:
            raise OptionError(f"llama-bench has no test parameter for {key}; tune cannot calibrate with it")
        flag = (spelling or {}).get(key)
        if flag is None:
            raise OptionError(f"llama-bench of this build has no {opt.bench}; tune cannot calibrate {key}")
        if opt.kind == "tristate":
            text = _text(value)
            if not any(v in flag.values for v in ("on", "auto")):  # an older llama-bench: -fa 0|1
                text = {"on": "1", "off": "0"}.get(text, text)
            argv += [flag.flag, text]
        elif opt.kind == "toggle":  # 0|1; a negative test parameter (-nkvo) is 1 for off
            negative = opt.bench in opt.off
            argv += [
                (flag.off or flag.flag) if negative else flag.flag,
                "1" if bool(value) != negative else "0",
            ]
        elif opt.bench_sep:
            argv += [flag.flag, str(value).replace(",", opt.bench_sep)]
        else:
            argv += [flag.flag, _text(value)]
    return argv
