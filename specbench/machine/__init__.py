"""Machine: what the machine is, whether it is quiet, and whether its own speed held: how specbench
decides that a number measured here can be trusted (envinfo, noise, speed, contention)."""
