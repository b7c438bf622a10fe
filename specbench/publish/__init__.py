"""``specbench publish``: a static results site from the history and the run folders (as ``asv publish``)."""
