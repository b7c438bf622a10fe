"""Analysis: a run folder's samples into figures with intervals, the speed model, reports and plots."""
