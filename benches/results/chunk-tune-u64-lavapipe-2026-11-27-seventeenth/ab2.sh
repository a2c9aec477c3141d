#!/bin/bash
cd /work/main
b=target/release
out=/tmp/tt/ab2; mkdir -p $out
colls=broadcast,collect,fcollect,alltoall,alltoalls,reduce
common="--no-roofline --scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check"
run() { tag=$1; n=$2; shift 2; env "$@" $b/vkshmrun -n $n $b/vkshmem-bench $common --collective $colls > $out/$tag.txt < /dev/null; grep -hE '^ *[a-z]+ +host ' $out/$tag.txt | awk -v t="$tag" '{print t, $1, $3, $7, $13}' >> $out/summary.txt; }
for r in 1 2; do
 for n in 4 8; do
  run r$r-${n}pe-A $n X=1
  run r$r-${n}pe-B $n VKS_TUNE_STREAMS=5 VKS_TUNE_CHUNK=64 VKS_TUNE_CHUNK2=32
 done
done
echo done >> $out/summary.txt
