"""specbench: trustworthy numbers for speculative decoding in llama.cpp."""

__version__ = "0.1.0"
