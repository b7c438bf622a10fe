"""Execute: run a plan (the runner loop, process and llama-server executors, the one judge of a sample)."""
