#!/usr/bin/env bash
# One sweep across a Slurm cluster: each array task runs one shard, then one job merges them.
#
#   sbatch --array=1-4 examples/slurm-array.sh configs/quickstart.yaml
#   # when every task has finished:
#   .venv/bin/specbench merge results/shards/shard-* --out results/sweep
#
# specbench reads SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT itself (`--shard` is not needed)
# and says on stderr which shard it runs. Without SPECBENCH_SHARD_CELLS each task deals the plan
# from its sizes (every node deals it the same way); `specbench plan CONFIG --shards 4` shows a cut
# balanced on this machine's history, whose cells a task takes through SPECBENCH_SHARD_CELLS.
#SBATCH --job-name=specbench-shard
#SBATCH --exclusive
#SBATCH --time=06:00:00
#SBATCH --output=results/shards/slurm-%A_%a.log
set -euo pipefail

config=${1:?usage: sbatch --array=1-N examples/slurm-array.sh CONFIG}
mkdir -p results/shards
exec .venv/bin/specbench run "$config" --out "results/shards/shard-${SLURM_ARRAY_TASK_ID}"
