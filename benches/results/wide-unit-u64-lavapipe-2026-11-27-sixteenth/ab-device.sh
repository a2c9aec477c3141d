#!/bin/sh
# Sixteenth session: the device forms (work_group, work_groups) with the
# library's vec4 view as array<vec4<u32>> (VKSHMEM_WIDE_UNIT=u32) against
# array<vec2<u64>> (u64, the default on llvmpipe), the same binary,
# interleaved, two rounds, 2 PEs at 4 MiB, checked; absolute times only.
# Usage: [BIN=target/release] ab-device.sh OUTDIR
set -e
out=$1
b=${BIN:-target/release}
mkdir -p "$out"
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
for r in 1 2; do
  for u in u32 u64; do
    VKSHMEM_WIDE_UNIT=$u $b/vkshmrun -n 2 $b/vkshmem-bench --no-roofline --scope work_groups,work_group --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check --collective $colls --type float --csv "$out/r$r-device-2pe-$u.csv" > "$out/r$r-device-2pe-$u.txt" < /dev/null
  done
done
for f in "$out"/*.txt; do
  tag=$(basename "$f" .txt)
  grep -hE '^ *[a-z]+ +work_groups? ' "$f" | awk -v t="$tag" '{print t, $1, $2, $7, $13}'
done
