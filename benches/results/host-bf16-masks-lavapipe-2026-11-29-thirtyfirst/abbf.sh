#!/bin/sh
# bf16 reductions at 4 MiB, old (/tmp/bin0) against new (/tmp/bin1), interleaved rounds.
for r in 1 2 3 4 5; do
 for n in 2 4; do
  for op in sum max; do for v in 0 1; do
   b=/tmp/bin$v
   VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n $n $b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 50 --warmup 2 --check --collective reduce --type bfloat16 --op $op > r$r-n$n-$op-b$v.txt 2>&1
   awk -v t="r$r n$n bin$v" '/^ *reduce +host /{print t, $4, "median", $7, "min", $8, "pct", $10, "wrong", $13}' r$r-n$n-$op-b$v.txt
  done; done
 done
done
