#!/bin/bash
# The error words' readback (89a192d) against the build before it (d6275b8,
# phase times only), vkshmem-bench on lavapipe with the heap unmapped (as on
# NVIDIA) and one submitter, 1 and 2 PEs, interleaved in three rounds.
# OLD and NEW: folders holding vkshmrun and vkshmem-bench of each build.
OLD=${OLD:-/tmp/old-target/release}; NEW=${NEW:-target/release}; OUT=${1:-/tmp/ab}
mkdir -p $OUT
for r in 1 2 3; do for v in old new; do
  if [ $v = old ]; then B=$OLD; else B=$NEW; fi
  for n in 1 2; do
    VKSHMEM_SUBMIT=leader VKSHMEM_HEAP_MAPPING=off VKSHMEM_SYMMETRIC_SIZE=256M timeout 300 \
      $B/vkshmrun -n $n $B/vkshmem-bench --collective broadcast,reduce,alltoall --min-bytes 16 \
      --max-bytes 64K --step-factor 64 --no-roofline --iters 50 --warmup 5 --phases \
      --csv $OUT/$v-${n}pe-r$r.csv < /dev/null > $OUT/$v-${n}pe-r$r.txt 2>&1
  done
done; done
