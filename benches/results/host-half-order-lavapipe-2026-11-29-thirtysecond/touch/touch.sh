#!/bin/sh
# Rows without --check, sources never written (bin2, e2c6aab's bench) against written (bin4,
# floors::touch), 4 PEs at 4 MiB, interleaved rounds.
for r in 1 2 3; do for v in 2 4; do
  b=/tmp/bin$v
  VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n 4 $b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --csv r$r-b$v.csv > r$r-b$v.txt 2>&1
  awk -F, -v t="r$r bin$v" 'NR>1{printf "%s %s %.1fus %.1f%% roof %.1f\n", t, $1, $9, $14, $15}' r$r-b$v.csv
done; done
