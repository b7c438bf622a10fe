"""Plan: a config (YAML, --set) into cells, prompts and the invocations to run, checked before any run."""
