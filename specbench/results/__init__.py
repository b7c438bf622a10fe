"""Results: the run folder (manifest, samples, raw logs), a cell's identity, metrics and precision."""
