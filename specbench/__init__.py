"""specbench: trustworthy numbers for speculative decoding in llama.cpp."""

__version__ = "0.2.0"
