#!/bin/sh
# 2-PE reductions at 4 MiB: half types by op, int16 sum as the memory-bound reference.
for r in 1 2; do
 for t in bfloat16 float16; do for op in sum max min; do
   b=/tmp/bin0
   VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n 2 $b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 50 --warmup 2 --check --collective reduce --type $t --op $op > r$r-$t-$op.txt 2>&1
   awk -v t="r$r $t $op" '/^ *reduce +host /{print t, "median", $7, "min", $8, "pct", $10, "wrong", $13}' r$r-$t-$op.txt
 done; done
 VKSHMEM_SYMMETRIC_SIZE=256M /tmp/bin0/vkshmrun -n 2 /tmp/bin0/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 50 --warmup 2 --check --collective reduce --type int16 --op max > r$r-int16.txt 2>&1
 awk -v t="r$r int16 max" '/^ *reduce +host /{print t, "median", $7, "min", $8, "pct", $10, "wrong", $13}' r$r-int16.txt
done
