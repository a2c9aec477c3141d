#!/bin/sh
# usage: abred.sh OUT rounds ; A/B of binA binB on 2-PE reduce at offsets
out=$1; mkdir -p $out
export VKSHMEM_SYMMETRIC_SIZE=256M
for r in $(seq 1 $2); do for b in A B; do for o in 0 4; do for t in float int8; do
  /tmp/bin$b/vkshmrun -n 2 /tmp/bin$b/vkshmem-bench --scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --collective reduce --type $t --offset $o --check 2>&1 | grep -E "^ *reduce " | awk -v b=$b -v o=$o -v r=$r '{print "r"r, b, "off"o, $3, $7, $8}' >> $out/ab.txt
done; done; done; done
cat $out/ab.txt
