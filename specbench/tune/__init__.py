"""Tune: the best draft setting for a pair on this machine, fast (calibrate, predict, measure in rounds)."""
