#!/bin/bash
# A/B of bf16 reductions: CUR (AVX2, 8 elements at a time) against BF
# (AVX-512F, 16 at a time), 64 KiB-4 MiB on 2, 4 and 8 PEs, out of place and
# in place, four interleaved rounds, --check. summary.py OUT cur bf.
# Usage: CUR=dir BF=dir run.sh OUT
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
for round in 1 2 3 4; do for n in 2 4 8; do for ty in bfloat16 bfloat16-inplace; do for v in cur bf; do
  dir=$CUR; [ $v = bf ] && dir=$BF
  t=${ty%-inplace}; extra=""; [ $t != $ty ] && extra="--in-place"
  timeout 120 "$dir/vkshmrun" -n $n "$dir/vkshmem-bench" --collective reduce --type $t $extra --min-bytes 64K --max-bytes 4M --step-factor 4 --iters 30 --check --no-roofline --csv "$out/$v-$n-$ty-r$round.csv" < /dev/null > /dev/null 2>&1 || echo FAIL $v $n $ty
done; done; done; done
