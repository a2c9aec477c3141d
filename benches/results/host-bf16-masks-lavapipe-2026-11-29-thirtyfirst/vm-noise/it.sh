#!/bin/sh
# 2-PE host rows at 4 MiB: --iters 20 against --iters 200, interleaved rounds.
b=${BIN:-/tmp/bin0}
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
for r in 1 2 3; do
 for it in 20 200; do
  VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n 2 $b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters $it --warmup 2 --check --collective $colls --type float > r$r-i$it.txt
  grep -hE '^ *[a-z]+ +host ' r$r-i$it.txt | awk -v t="r$r i$it" '{print t, $1, $10, $13}'
 done
done
