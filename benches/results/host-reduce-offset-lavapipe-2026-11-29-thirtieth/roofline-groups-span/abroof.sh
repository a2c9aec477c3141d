#!/bin/sh
# usage: abroof.sh OUT rounds "bins" "npes"
out=$1; mkdir -p $out
export VKSHMEM_SYMMETRIC_SIZE=256M
for r in $(seq 1 $2); do for n in $4; do for b in $3; do
  /tmp/bin$b/vkshmrun -n $n /tmp/bin$b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --collective broadcast,collect,fcollect,alltoall --csv $out/r$r-$b-$n.csv > $out/r$r-$b-$n.txt 2>&1
  tail -n +2 $out/r$r-$b-$n.csv | awk -F, -v b=$b -v r=$r '{printf "r%s %s %s %dpe med %.1f pct %.1f roofGBps %.1f\n", r, b, $1, $6, $9, $14, $15}' >> $out/ab.txt
done; done; done
cat $out/ab.txt
