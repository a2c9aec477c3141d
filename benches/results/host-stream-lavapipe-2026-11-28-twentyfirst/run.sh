#!/bin/bash
# Streaming stores on the direct host path, off against on: BIN=<release build> run.sh OUT; summary.py OUT (best of two rounds).
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p $out
for round in 1 2; do
for n in 8 4 2; do
  for s in off on; do
    VKSHMEM_HOST_STREAM=$s timeout 300 $BIN/vkshmrun -n $n $BIN/vkshmem-bench --collective broadcast,fcollect,collect,alltoall,reduce --min-bytes 1M --max-bytes 4M --iters 20 --no-roofline --check --csv $out/s$s-$n-r$round.csv < /dev/null > /dev/null 2>&1 || echo "FAIL $n $s"
  done
done; done
