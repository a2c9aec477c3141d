#!/bin/sh
# UCC's host collectives on a heap the host does not map
# (VKSHMEM_HEAP_MAPPING=off: every access through the device's copies),
# before (bin0, cbb3c68: reads into a host buffer, then written; folds
# part by part on the host) and after (bin3, 50a242e: the device's wide
# copy and accumulate kernels straight into the dest), 2 and 4 PEs,
# 128 KiB and 4 MiB, checked, three interleaved rounds.
C=gather,scatter,allgatherv,alltoallv,reduce_scatter,reduce_to_root,inscan,exscan
for r in 1 2 3; do
 for n in 2 4; do
  for v in 0 3; do
   VKSHMEM_HEAP_MAPPING=off VKSHMEM_SYMMETRIC_SIZE=256M /tmp/bin$v/vkshmrun -n $n /tmp/bin$v/vkshmem-bench --scope host --min-bytes 128K --max-bytes 4M --step-factor 32 --iters 20 --warmup 2 --check --no-roofline --collective $C > r$r-n$n-v$v.txt 2>&1
   awk -v t="r$r n$n v$v" '/^ *[a-z_]+ +host /{print t, $1, $6, "median", $7, "min", $8, "wrong", $13}' r$r-n$n-v$v.txt
  done
 done
done
