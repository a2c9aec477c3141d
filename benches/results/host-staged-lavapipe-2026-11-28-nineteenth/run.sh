#!/bin/bash
# Host collectives on llvmpipe past the plane's data slot: on the kernels
# (VKSHMEM_HOST_MAPPED_MAX=16K, the default before 2e31bb0) against on the
# host in staged rounds (the default from 2e31bb0), the same binary,
# interleaved, two rounds; median us per call, every row checked.
# Usage: [BIN=target/release] run.sh OUTDIR
export VKSHMEM_SYMMETRIC_SIZE=256M
b=${BIN:-target/release}
out=$1; mkdir -p "$out"
for r in 1 2; do for n in 2 3 4 8; do for mode in kernels host; do
  env=""; [ $mode = kernels ] && env="VKSHMEM_HOST_MAPPED_MAX=16K"
  env $env $b/vkshmrun -n $n $b/vkshmem-bench --no-roofline --scope host --min-bytes 4K --max-bytes 4M --step-factor 4 --iters 20 --warmup 2 --check --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --type float --csv "$out/$mode-$n-$r.csv" < /dev/null > "$out/$mode-$n-$r.txt" 2>&1
  echo "$mode n=$n r=$r rc=$? $(grep -o 'rows=.*' "$out/$mode-$n-$r.txt")"
done; done; done
