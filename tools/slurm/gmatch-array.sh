#!/bin/bash
# gmatch-array.sh: one shard of a gmatch --batch manifest per Slurm array task.
#
#   sbatch --array=0-15 tools/slurm/gmatch-array.sh pairs.jsonl out/
#   tools/gmatch-merge.py out/out.*.jsonl > all.jsonl     # when all are done
#
# Task I of an array of N (--array=0-(N-1)) runs
#   gmatch --batch MANIFEST --shard I/N --resume out/out.I.jsonl -o out/out.I.jsonl
# so a task that is requeued (preempted, a node lost: sbatch --requeue) goes
# on after the last complete line instead of starting again, and a finished
# task run twice adds nothing.  Extra gmatch options after the folder
# (--device cuda, --model auto, ...).  GMATCH names the binary (default: gmatch
# on PATH).  The shards are disjoint and together give exactly the manifest
# (docs/batch.md); every task reads the whole manifest, so keep it where all
# nodes see it.  Exit status: gmatch's (1 when some pair failed: see its
# error lines; 2 for a usage error).
#SBATCH --job-name=gmatch
#SBATCH --output=gmatch-%A_%a.log
#SBATCH --requeue
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: sbatch --array=0-(N-1) $0 MANIFEST OUTDIR [GMATCH OPTIONS...]" >&2
    exit 2
fi
manifest=$1 outdir=$2
shift 2
i=${SLURM_ARRAY_TASK_ID:?not in a Slurm job array (sbatch --array=0-(N-1))}
# N: the array's size; --array=0-15 gives 16 (a step or a list is not a shard layout)
lo=${SLURM_ARRAY_TASK_MIN:-0}
hi=${SLURM_ARRAY_TASK_MAX:?not in a Slurm job array}
if [ "$lo" != 0 ]; then
    echo "gmatch-array.sh: the array must start at 0 (--array=0-$((hi - lo)))" >&2
    exit 2
fi
n=$((hi + 1))
if [ -n "${SLURM_ARRAY_TASK_COUNT:-}" ] && [ "$SLURM_ARRAY_TASK_COUNT" != "$n" ]; then
    echo "gmatch-array.sh: --array must be 0-$((n - 1)) without steps or gaps" >&2
    exit 2
fi
mkdir -p "$outdir"
out="$outdir/out.$i.jsonl"
exec "${GMATCH:-gmatch}" --batch "$manifest" --shard "$i/$n" --resume "$out" -o "$out" -q "$@"
