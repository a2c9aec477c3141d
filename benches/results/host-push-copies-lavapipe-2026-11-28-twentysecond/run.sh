#!/bin/bash
# A/B of the direct path's broadcast, collect and fcollect: OLD (every
# member pulls the contributions into its own dest) against NEW (each
# contribution, a broadcast's cut in slices, is read once by one member and
# pushed into every dest). 64 KiB to 4 MiB on 2, 3, 4 and 8 PEs, float,
# in place too for the gathers, interleaved, two rounds; summary.py OUT
# (the push-reduce results' summary.py).
# Usage: OLD=dir NEW=dir run.sh OUT
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2; do
for n in 2 3 4 8; do
for c in broadcast collect fcollect collect-inplace fcollect-inplace; do
  for v in old new; do
    dir=$OLD; [ $v = new ] && dir=$NEW
    coll=${c%-inplace}; extra=""; [ $coll != $c ] && extra="--in-place"
    timeout 300 "$dir/vkshmrun" -n $n "$dir/vkshmem-bench" --collective $coll $extra \
      --min-bytes 64K --max-bytes 4M --step-factor 4 --iters 20 --no-roofline --check \
      --csv "$out/$v-$n-$c-r$round.csv" < /dev/null > /dev/null 2>&1 || echo "FAIL $v $n $c"
  done
done; done; done
