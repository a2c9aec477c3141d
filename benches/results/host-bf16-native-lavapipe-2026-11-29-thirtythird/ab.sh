#!/bin/sh
# bf16 sums and products at 4 MiB: before (bin0, integer rounding at the store)
# and after (bin1, AVX512-BF16's vcvtne2ps2bf16 at the store), three
# interleaved rounds on 2, 4 and 8 PEs.
for r in 1 2 3; do
 for n in 2 4 8; do
  for op in sum prod; do
   for v in 0 1; do
    b=/tmp/bin$v
    VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n $n $b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 50 --warmup 2 --check --collective reduce --type bfloat16 --op $op > r$r-n$n-$op-$v.txt 2>&1
    awk -v t="r$r n$n $op v$v" '/^ *reduce +host /{print t, "median", $7, "min", $8, "pct", $10, "wrong", $13}' r$r-n$n-$op-$v.txt
   done
  done
 done
done
