#!/bin/sh
# Half-type reductions at 4 MiB: combined into the dest (as built) against in L1 chunks
# (AB_HALVES_L1=1, the same binary), interleaved rounds; out of place and in place.
b=/tmp/bin2
for r in 1 2 3 4; do
 for n in 2 4; do
  for t in bfloat16 float16; do for op in sum max; do for ip in "" --in-place; do for v in 0 1; do
   if [ $v = 1 ]; then export AB_HALVES_L1=1; else unset AB_HALVES_L1; fi
   VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n $n $b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 30 --warmup 2 --check --collective reduce --type $t --op $op $ip > r$r-n$n-$t-$op$ip-v$v.txt 2>&1
   awk -v t="r$r n$n $t $op ${ip:-out} l1=$v" '/^ *reduce +host /{print t, "median", $7, "min", $8, "pct", $10, "wrong", $13}' r$r-n$n-$t-$op$ip-v$v.txt
  done; done; done; done
 done
done
