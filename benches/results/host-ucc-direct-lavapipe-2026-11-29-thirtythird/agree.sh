#!/bin/sh
# UCC's agreement and closing sync over the bootstrap socket (bin3) against
# meetings on the sync plane (bin4), 2 and 4 PEs, 1 KiB and 128 KiB,
# checked, two interleaved rounds.
C=gather,scatter,allgatherv,alltoallv,reduce_scatter,reduce_to_root,inscan,exscan
for r in 1 2; do
 for n in 2 4; do
  for v in 3 4; do
   VKSHMEM_SYMMETRIC_SIZE=256M /tmp/bin$v/vkshmrun -n $n /tmp/bin$v/vkshmem-bench --scope host --min-bytes 1K --max-bytes 128K --step-factor 128 --iters 50 --warmup 5 --check --collective $C > a$r-n$n-v$v.txt 2>&1
   awk -v t="r$r n$n v$v" '/^ *[a-z_]+ +host /{print t, $1, $6, "median", $7, "min", $8, "wrong", $13}' a$r-n$n-v$v.txt
  done
 done
done
