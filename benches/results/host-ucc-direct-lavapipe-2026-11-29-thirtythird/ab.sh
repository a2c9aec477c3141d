#!/bin/sh
# UCC's host collectives before (bin1: through a host buffer, part by part)
# and after (bin3: straight from the mappings into the dest), 2 and 4 PEs,
# 128 KiB and 4 MiB, checked, two interleaved rounds.
C=gather,scatter,allgatherv,alltoallv,reduce_scatter,reduce_to_root,inscan,exscan
for r in 1 2; do
 for n in 2 4; do
  for v in 1 3; do
   VKSHMEM_SYMMETRIC_SIZE=256M /tmp/bin$v/vkshmrun -n $n /tmp/bin$v/vkshmem-bench --scope host --min-bytes 128K --max-bytes 4M --step-factor 32 --iters 20 --warmup 2 --check --collective $C > r$r-n$n-v$v.txt 2>&1
   awk -v t="r$r n$n v$v" '/^ *[a-z_]+ +host /{print t, $1, $6, "median", $7, "min", $8, "wrong", $13}' r$r-n$n-v$v.txt
  done
 done
done
