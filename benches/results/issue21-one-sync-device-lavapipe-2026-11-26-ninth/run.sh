#!/bin/sh
# Device forms before/after the one-sync pushes (fcollect, alltoall, alltoalls
# move before their only sync where every member is reached directly), two
# binaries interleaved on the same machine: 2 PEs, per-thread, work_group and
# work_groups forms, 4 bytes and 1 KiB (their fixed cost) and 4 MiB, every
# row checked. Usage: OLD=bin NEW=bin run.sh OUTDIR ROUNDS
set -e
out=$1
rounds=${2:-2}
mkdir -p "$out"
small="--scope thread,work_group,work_groups --collective barrier,broadcast,fcollect,alltoall,alltoalls,reduce --min-bytes 4 --max-bytes 1K --iters 30 --warmup 2 --check"
large="--scope work_group,work_groups --collective broadcast,fcollect,alltoall,alltoalls --min-bytes 4M --max-bytes 4M --iters 10 --warmup 2 --check"
for r in $(seq 1 "$rounds"); do
  for which in old new; do
    eval bin=\$$(echo "$which" | tr a-z A-Z)
    target/release/vkshmrun -n 2 "$bin" $small --csv "$out/small-$which-$r.csv" > "$out/small-$which-$r.txt" < /dev/null
    target/release/vkshmrun -n 2 "$bin" $large --csv "$out/large-$which-$r.csv" > "$out/large-$which-$r.txt" < /dev/null
  done
done
