"""Stand-in llama.cpp sources for build tests."""

from __future__ import annotations

FAKE_MAIN = r"""#include <cstdio>
#include <cstring>
int main(int argc, char ** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--version") == 0) {
        std::printf("version: 1 (abc1234)\nbuilt with fake for test\n");
        return 0;
    }
    std::printf("--draft-max, --draft N   number of tokens to draft\n");
    std::printf("-md,   --model-draft FNAME   draft model\n");
    return 0;
}
"""
