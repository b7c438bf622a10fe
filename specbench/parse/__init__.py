"""Pure parsers over llama.cpp's process logs and llama-server's responses and /metrics."""
