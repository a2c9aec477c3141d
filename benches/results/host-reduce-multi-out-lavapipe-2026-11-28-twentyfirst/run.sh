#!/bin/bash
# A/B of the direct path's reduction: OLD (reduce-scatter, meeting,
# allgather) against NEW (slice owners push into every dest). Host
# reductions from 64 KiB to 4 MiB on 2, 3, 4 and 8 PEs, float, bfloat16 and
# int8 sum, in place for float too, interleaved, two rounds; summary.py OUT.
# Usage: OLD=dir NEW=dir run.sh OUT
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2; do
for n in 2 3 4 8; do
for ty in float bfloat16 int8 float-inplace; do
  for v in old new; do
    dir=$OLD; [ $v = new ] && dir=$NEW
    t=${ty%-inplace}; extra=""; [ $ty = float-inplace ] && extra="--in-place"
    timeout 300 "$dir/vkshmrun" -n $n "$dir/vkshmem-bench" --collective reduce --type $t $extra \
      --min-bytes 64K --max-bytes 4M --step-factor 4 --iters 20 --no-roofline --check \
      --csv "$out/$v-$n-$ty-r$round.csv" < /dev/null > /dev/null 2>&1 || echo "FAIL $v $n $ty"
  done
done; done; done
