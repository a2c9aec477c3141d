#!/bin/bash
# A/B of the host combine: OLD and NEW are directories holding a release
# build's vkshmrun and vkshmem-bench. Host reductions at 1 and 4 MiB on 2 and
# 8 PEs, six types, sum and max, interleaved, two rounds; `summary.py OUT`.
# Usage: OLD=dir NEW=dir run.sh OUT
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2; do
for n in 2 8; do
for ty in float int8 int64 double float16 bfloat16; do
for op in sum max; do
  for v in old new; do
    dir=$OLD; [ $v = new ] && dir=$NEW
    timeout 300 "$dir/vkshmrun" -n $n "$dir/vkshmem-bench" --collective reduce --type $ty --op $op \
      --min-bytes 1M --max-bytes 4M --iters 20 --no-roofline --check \
      --csv "$out/$v-$n-$ty-$op-r$round.csv" < /dev/null > /dev/null 2>&1 || echo "FAIL $v $n $ty $op"
  done
done; done; done; done
