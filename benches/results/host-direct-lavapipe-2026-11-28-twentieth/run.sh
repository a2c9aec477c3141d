#!/bin/bash
# Host collectives on llvmpipe past the plane's data slot: in rounds through
# the staging buffers (OLD: a build of 23ea220, the nineteenth session's
# stop) against straight from the members' mapped heaps (NEW: collective/
# direct.rs), interleaved, two rounds; median us per call, every row checked.
# Then reductions over other types on 2 and 8 PEs (8 PEs: OLD moved them on
# the kernels past 256 KiB).
# Usage: OLD=dir NEW=dir run.sh OUTDIR
export VKSHMEM_SYMMETRIC_SIZE=256M
out=$1; mkdir -p "$out"
run() { # mode n tag args...
  local mode=$1 n=$2 tag=$3; shift 3
  local b; [ $mode = old ] && b=$OLD || b=$NEW
  $b/vkshmrun -n $n $b/vkshmem-bench --no-roofline --scope host --iters 20 --warmup 2 --check --csv "$out/$mode-$n-$tag.csv" "$@" < /dev/null > "$out/$mode-$n-$tag.txt" 2>&1
  echo "$mode n=$n $tag rc=$? $(grep -o 'rows=.*' "$out/$mode-$n-$tag.txt")"
}
for r in 1 2; do for n in 2 3 4 8; do for mode in old new; do
  run $mode $n r$r --min-bytes 64K --max-bytes 4M --step-factor 4 --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --type float
done; done; done
for n in 2 8; do for t in int8 int64 double bfloat16; do for mode in old new; do
  run $mode $n $t --min-bytes 64K --max-bytes 4M --step-factor 4 --collective reduce --type $t
done; done; done
