#!/bin/sh
# The device forms at 4 MiB on 2 PEs (float, and reduce over the other types)
# and at 64 bytes (their fixed cost), every row checked against the host.
# Usage: [BIN=target/release] [WG=N] run.sh OUTDIR
# WG: --workgroup-size (unset: the bench's default; 256 before 2026-11-26's
# change, 64 on llvmpipe after it).
set -e
out=$1
b=${BIN:-target/release}
mkdir -p "$out"
wg=${WG:+--workgroup-size $WG}
common="--scope work_group,work_groups --iters 10 --warmup 2 --check $wg"
bench() { name=$1; shift; $b/vkshmrun -n 2 $b/vkshmem-bench $common --csv "$out/$name.csv" "$@" > "$out/$name.txt"; }
bench 4m-float --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --min-bytes 4M --max-bytes 4M
for t in int8 int16 int64 double; do bench 4m-reduce-$t --collective reduce --type $t --min-bytes 4M --max-bytes 4M; done
bench 64b-float --collective barrier,broadcast,fcollect,reduce --min-bytes 64 --max-bytes 64 --iters 50
for f in "$out"/*.txt; do
  tag=$(basename "$f" .txt)
  grep -h '^ *[a-z]* *work_group' "$f" | awk -v t="$tag" '{print t, $1, $2, $3, $7, $10, $13}'
done
