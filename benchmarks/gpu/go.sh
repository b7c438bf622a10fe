#!/usr/bin/env bash
# Runs the committed snapshot (.gpu/proj.tar.gz), not the working tree, so edits made meanwhile don't matter.
mkdir -p /tmp/proj && tar xzf .gpu/proj.tar.gz -C /tmp/proj && ln -sfn "$PWD/.gpu" /tmp/proj/.gpu && true
cd /tmp/proj && bash .gpu/${GPU_SCRIPT:-gpu-run.sh}
