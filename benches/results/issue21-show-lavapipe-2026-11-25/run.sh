#!/bin/sh
# Issue 21's Show on this machine: host collectives at 4 MiB on 2, 4 and 8 PEs,
# the reductions over every type on 2 PEs (and float at an unaligned offset
# where the bench has --offset), checked.
# Usage: [BIN=target/release] run.sh OUTDIR [TYPES]
set -e
out=$1; types=${2:-"int8 int16 int64 double"}
b=${BIN:-target/release}
mkdir -p "$out"
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
common="--scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check"
for n in 2 4 8; do
  $b/vkshmrun -n $n $b/vkshmem-bench --collective $colls --type float $common \
    --csv "$out/float-${n}pe.csv" > "$out/float-${n}pe.txt"
done
for t in $types; do
  $b/vkshmrun -n 2 $b/vkshmem-bench --collective reduce --type $t $common \
    --csv "$out/reduce-$t-2pe.csv" > "$out/reduce-$t-2pe.txt"
done
grep -h '^ *[a-z]* *host' "$out"/*.txt | awk '{print $1, $3, $4, $5, $10, $13}'
