#!/bin/sh
# f16/bf16 max and min at 4 MiB: old (bin0), bits-compared (bin1), and bin1 with L1 chunks (AB_HALF_ORDER_L1).
for r in 1 2 3; do
 for n in 2 4; do
  for t in bfloat16 float16; do for op in max min; do
   for v in 0 1 L; do
    b=/tmp/bin$v; env=""; [ $v = L ] && { b=/tmp/bin1; env="AB_HALF_ORDER_L1=1"; }
    env $env VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n $n $b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 50 --warmup 2 --check --collective reduce --type $t --op $op > r$r-n$n-$t-$op-$v.txt 2>&1
    awk -v t="r$r n$n $t $op v$v" '/^ *reduce +host /{print t, "median", $7, "min", $8, "pct", $10, "wrong", $13}' r$r-n$n-$t-$op-$v.txt
   done
  done; done
 done
done
