#!/bin/sh
# Issue 21's Show on this machine: host collectives at 4 MiB on 2, 4 and 8 PEs,
# the reductions over every type on 2 PEs, and (where the bench has the
# options: EXTRA=1) reductions in place and objects at a 4-byte offset.
# Every row checked against the host reference.
# Usage: [BIN=target/release] [EXTRA=1] run.sh OUTDIR [TYPES]
set -e
out=$1; types=${2:-"int8 int16 int64 double"}
b=${BIN:-target/release}
mkdir -p "$out"
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
common="--scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check"
bench() { name=$1; n=$2; shift 2; $b/vkshmrun -n $n $b/vkshmem-bench $common --csv "$out/$name.csv" "$@" > "$out/$name.txt"; }
for n in 2 4 8; do bench float-${n}pe $n --collective $colls --type float; done
for t in $types; do bench reduce-$t-2pe 2 --collective reduce --type $t; done
if [ -n "$EXTRA" ]; then
  bench reduce-float-inplace-2pe 2 --collective reduce --type float --in-place
  bench offset4-float-2pe 2 --collective broadcast,reduce --type float --offset 4
fi
for f in "$out"/*.txt; do
  tag=$(basename "$f" .txt)
  grep -h '^ *[a-z]* *host' "$f" | awk -v t="$tag" '{print t, $1, $3, $4, $5, $10, $13}'
done
