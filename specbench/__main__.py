"""`python -m specbench`: the same entry point as the `specbench` command."""

from specbench.cli import main

main()
