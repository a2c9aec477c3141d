#!/bin/sh
# usage: abh.sh OUT rounds n binA binB...   (host rows, roofline)
out=$1; r=$2; n=$3; shift 3
mkdir -p $out
for i in $(seq 1 $r); do for b in "$@"; do
  VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n $n $b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --type float --check --csv $out/$(basename $b)-$i.csv > $out/$(basename $b)-$i.txt 2>&1
done; done
