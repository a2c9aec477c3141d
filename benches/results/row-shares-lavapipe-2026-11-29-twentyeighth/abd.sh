#!/bin/sh
# usage: abd.sh OUT rounds binA binB...   (the Show's device line, with the roofline)
out=$1; r=$2; shift 2
mkdir -p $out
for i in $(seq 1 $r); do for b in "$@"; do
  VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n 2 $b/vkshmem-bench --scope work_groups,work_group --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --type float --csv $out/$(basename $b)-$i.csv > $out/$(basename $b)-$i.txt 2>&1
done; done
