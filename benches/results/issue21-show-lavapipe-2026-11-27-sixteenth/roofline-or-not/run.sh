#!/bin/sh
# 4-PE float line at 4 MiB with and without the roofline, interleaved.
b=target/release; out=$1; mkdir -p $out
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
for r in 1 2; do
  for v in roof noroof; do
    extra=""; [ $v = noroof ] && extra=--no-roofline
    $b/vkshmrun -n 4 $b/vkshmem-bench $extra --scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check --collective $colls --type float > $out/r$r-$v.txt < /dev/null
    echo "r$r $v: $(grep -E '^ *[a-z]+ +host ' $out/r$r-$v.txt | awk '{printf "%s %s | ", $1, $7}')"
  done
done
