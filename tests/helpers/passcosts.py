"""Calibration readings for the tests of what a calibration may say (results.calibration) and what
the speed model makes of it (analysis.speedmodel): synthetic, in milliseconds."""

from __future__ import annotations

from specbench.results.calibration import PassCosts

# A GPU's passes (smol_f32 on the H200 that reported it): about 1 ms whatever k up to 9, then growing.
# 6 and 9 are the report's two readings (1.22 and 0.9024 ms); the rest scatter around 1 ms as a flat
# cost does. FLAT_GPU_SD: llama-bench's standard deviation of each over its two repetitions.
FLAT_GPU = {1: 1.00, 2: 1.02, 3: 0.98, 4: 1.05, 5: 1.01, 6: 1.22, 7: 1.00, 8: 0.97, 9: 0.9024,
            13: 1.10, 17: 1.30, 25: 1.70, 33: 2.10}  # fmt: skip
FLAT_GPU_SD = {1: 0.02, 2: 0.02, 3: 0.03, 4: 0.02, 5: 0.03, 6: 0.03, 7: 0.02, 8: 0.02, 9: 0.02,
               13: 0.02, 17: 0.03, 25: 0.03, 33: 0.04}  # fmt: skip


def ms(readings: dict[int, float], sd: dict[int, float] | None = None, model: str = "smol_f32") -> PassCosts:
    """Pass costs of ``readings`` (k -> ms; the decode: k=1's) with llama-bench's ``sd`` (k -> ms)."""
    pass_s = {k: v / 1e3 for k, v in readings.items()}
    pass_sd = {k: v / 1e3 for k, v in (sd or {}).items()}
    return PassCosts(model=model, decode_s=readings[1] / 1e3, pass_s=pass_s, pass_sd=pass_sd)
