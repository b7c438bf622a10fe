"""Shared fixtures. Real llama.cpp builds and real GGUF models, cached under SPECBENCH_HOME."""

pytest_plugins = ["tests.fixtures.build", "tests.fixtures.models", "tests.fixtures.llama_history"]
