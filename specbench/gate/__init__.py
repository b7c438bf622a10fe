"""Gate: compare, baselines, history, and the paired A/B gate of ab and bisect (what fails CI)."""
