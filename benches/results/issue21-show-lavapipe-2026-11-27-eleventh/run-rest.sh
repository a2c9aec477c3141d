#!/bin/sh
# The seventh session's run.sh without its 8-PE line (the time left in the
# session): reductions over every other type on 2 PEs, a float reduce in
# place and every collective at a 4-byte offset on 2 PEs.
set -e
out=$1
b=${BIN:-target/release}
mkdir -p "$out"
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
common="--scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check"
bench() { name=$1; n=$2; shift 2; $b/vkshmrun -n $n $b/vkshmem-bench $common --csv "$out/$name.csv" "$@" > "$out/$name.txt"; }
for t in float16 bfloat16 int8 int16 int64 double; do bench reduce-$t-2pe 2 --collective reduce --type $t; done
bench reduce-float-inplace-2pe 2 --collective reduce --type float --in-place
bench offset4-all-2pe 2 --collective $colls --type float --offset 4
for f in "$out"/*.txt; do
  tag=$(basename "$f" .txt)
  grep -h '^ *[a-z]* *host' "$f" | awk -v t="$tag" '{print t, $1, $3, $4, $5, $10, $13}'
done
