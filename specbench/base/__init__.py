"""The floor every stage stands on: errors, paths, atomic files, the child environment, signals."""
