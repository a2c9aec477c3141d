#!/bin/sh
# allgatherv in place (each member's source its own part of the dest,
# MPI_IN_PLACE; vkshmem-bench --in-place) before (binA: 1ede977's library,
# the buffered steps for any dest over the exposed bytes) and after (binB:
# the reads that write apart from them go straight into the dest, the
# member's own part left where it is), with the heap mapped (lavapipe's
# default) and unmapped (the device's copies); 2, 3 and 4 PEs, 128 KiB and
# 4 MiB, checked, three interleaved rounds. Both bench binaries come from
# the same harness (the flag is new).
for r in 1 2 3; do
 for map in auto off; do
  for n in 2 3 4; do
   for v in A B; do
    VKSHMEM_HEAP_MAPPING=$map VKSHMEM_SYMMETRIC_SIZE=256M /tmp/bin$v/vkshmrun -n $n /tmp/bin$v/vkshmem-bench --scope host --min-bytes 128K --max-bytes 4M --step-factor 32 --iters 20 --warmup 2 --check --no-roofline --in-place --collective allgatherv > ip-r$r-$map-n$n-$v.txt 2>&1
    awk -v t="r$r $map n$n $v" '/^ *[a-z_]+ +host /{print t, $1, $6, "median", $7, "min", $8, "wrong", $13}' ip-r$r-$map-n$n-$v.txt
   done
  done
 done
done
