#!/bin/sh
# Sixteenth session: the host collectives' wide kernels in vec4<u32> units
# (VKSHMEM_WIDE_UNIT=u32, the code before 7e91118) against vec2<u64> (u64, the
# new default on llvmpipe), the same binary, interleaved per line, two rounds.
# Absolute times only (--no-roofline: the roofline moves with the unit);
# every row checked against the host reference.
# Usage: [BIN=target/release] ab.sh OUTDIR
set -e
out=$1
b=${BIN:-target/release}
mkdir -p "$out"
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
common="--no-roofline --scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check"
bench() { name=$1; n=$2; shift 2; for u in u32 u64; do VKSHMEM_WIDE_UNIT=$u $b/vkshmrun -n $n $b/vkshmem-bench $common --csv "$out/$name-$u.csv" "$@" > "$out/$name-$u.txt" < /dev/null; done; }
for r in 1 2; do
  for n in 2 4 8; do bench r$r-float-${n}pe $n --collective $colls --type float; done
  bench r$r-offset4-2pe 2 --collective $colls --type float --offset 4
  for t in int8 int16 int64 double float16 bfloat16; do bench r$r-reduce-$t-2pe 2 --collective reduce --type $t; done
done
for f in "$out"/*.txt; do
  tag=$(basename "$f" .txt)
  grep -hE '^ *[a-z]+ +host ' "$f" | awk -v t="$tag" '{print t, $1, $3, $7, $13}'
done
