#!/bin/sh
# Issue 21's host Show on this machine (seventh session's script; fifteenth: with the device line): every host collective
# at 4 MiB on 2, 4 and 8 PEs (float), reductions over every other type on 2
# PEs, a float reduce in place and every collective at a 4-byte offset on 2
# PEs; 20 timed calls after 2, every row checked against the host reference.
# Then the device forms (work_group, work_groups) on 2 PEs at 4 MiB.
# Usage: [BIN=target/release] run.sh OUTDIR
set -e
out=$1
b=${BIN:-target/release}
here=$(dirname "$0")
mkdir -p "$out"
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
common="--scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check"
bench() { name=$1; n=$2; shift 2; $b/vkshmrun -n $n $b/vkshmem-bench $common --csv "$out/$name.csv" "$@" > "$out/$name.txt"; }
for n in 2 4 8; do bench float-${n}pe $n --collective $colls --type float; done
for t in int8 int16 int64 double float16 bfloat16; do bench reduce-$t-2pe 2 --collective reduce --type $t; done
bench reduce-float-inplace-2pe 2 --collective reduce --type float --in-place
bench offset4-all-2pe 2 --collective $colls --type float --offset 4
# The device forms (the multi-workgroup ones are the line).
$b/vkshmrun -n 2 $b/vkshmem-bench --scope work_groups,work_group --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check --collective $colls --type float --csv "$out/device-2pe.csv" > "$out/device-2pe.txt"
for f in "$out"/*.txt; do
  tag=$(basename "$f" .txt)
  grep -hE '^ *[a-z]+ +(host|work_groups?) ' "$f" | awk -v t="$tag" '{print t, $1, $3, $4, $5, $10, $13}'
done
