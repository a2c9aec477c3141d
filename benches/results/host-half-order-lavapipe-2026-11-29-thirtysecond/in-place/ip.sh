#!/bin/sh
# 2-PE sums of 4 MiB in place and out of place, by type, interleaved rounds.
for r in 1 2 3; do
 for t in bfloat16 float16 float; do for ip in "" "--in-place"; do
   b=/tmp/bin2
   VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n 2 $b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 50 --warmup 2 --check --collective reduce --type $t --op sum $ip > r$r-$t$ip.txt 2>&1
   awk -v t="r$r $t ${ip:-oop}" '/^ *reduce +host /{print t, "median", $7, "min", $8, "pct", $10, "wrong", $13}' r$r-$t$ip.txt
 done; done
done
