#!/bin/sh
# usage: ab5.sh OUT rounds binA binB...   (interleaved per collective)
out=$1; r=$2; shift 2
mkdir -p $out
for c in broadcast fcollect alltoall reduce; do for i in $(seq 1 $r); do for b in "$@"; do
  VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n 2 $b/vkshmem-bench --no-roofline --scope work_group,work_groups --min-bytes 1M --max-bytes 4M --iters 30 --warmup 2 --collective $c --type float --check --csv $out/$(basename $b)-$c$i.csv > $out/$(basename $b)-$c$i.txt 2>&1
done; done; done
