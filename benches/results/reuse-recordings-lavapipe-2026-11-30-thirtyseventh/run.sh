#!/bin/sh
# Reused recordings against recording every submission, one binary, interleaved:
# 2 and 4 PEs on the kernels with one submitter (the path NVIDIA takes), 3 rounds.
# Usage: BIN=<release dir> sh run.sh OUT
set -eu
OUT=${1:?out dir}; BIN=${BIN:-target/release}
mkdir -p "$OUT"
for round in 1 2 3; do
  for n in 2 4; do
    for reuse in on off; do
      VKSHMEM_REUSE_RECORDINGS=$reuse VKSHMEM_HEAP_MAPPING=off VKSHMEM_SUBMIT=leader \
      VKSHMEM_SYMMETRIC_SIZE=64M "$BIN/vkshmrun" -n $n "$BIN/vkshmem-bench" --no-roofline \
        --collective broadcast,fcollect,alltoall,reduce,allreduce --scope host \
        --min-bytes 8 --max-bytes 1M --step-factor 16 --iters 40 --warmup 5 --check \
        --phases --csv "$OUT/r$round-n$n-$reuse.csv" > "$OUT/r$round-n$n-$reuse.txt" 2>&1
    done
  done
done
