"""Builder: get, configure and build llama.cpp for this machine, probe its binaries, self-test it."""
