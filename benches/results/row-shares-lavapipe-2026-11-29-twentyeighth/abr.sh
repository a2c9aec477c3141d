#!/bin/sh
# usage: abr.sh OUT rounds n colls binA binB...   (host rows, no roofline, interleaved)
out=$1; r=$2; n=$3; c=$4; shift 4
mkdir -p $out
for i in $(seq 1 $r); do for b in "$@"; do
  VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n $n $b/vkshmem-bench --no-roofline --scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --collective $c --type float --check --csv $out/$(basename $b)-$i.csv > $out/$(basename $b)-$i.txt 2>&1
done; done
