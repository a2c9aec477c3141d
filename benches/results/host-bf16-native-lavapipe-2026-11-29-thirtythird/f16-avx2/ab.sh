#!/bin/sh
# f16 sums at 4 MiB: AVX-512 16 at a time (v5) against AVX2 8 at a time (v2, AB_F16_AVX2), same binary.
for r in 1 2 3; do
 for n in 2 4 8; do
   for v in 5 2; do
    env=""; [ $v = 2 ] && env="AB_F16_AVX2=1"
    env $env VKSHMEM_SYMMETRIC_SIZE=256M /tmp/bin2/vkshmrun -n $n /tmp/bin2/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 50 --warmup 2 --check --collective reduce --type float16 --op sum > r$r-n$n-$v.txt 2>&1
    awk -v t="r$r n$n v$v" '/^ *reduce +host /{print t, "median", $7, "min", $8, "pct", $10, "wrong", $13}' r$r-n$n-$v.txt
   done
 done
done
