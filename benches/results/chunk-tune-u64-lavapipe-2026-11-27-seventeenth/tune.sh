#!/bin/bash
# chunk tuning in u64, release build; interleaved
cd /work/main
b=target/release
out=/tmp/tt/tune; mkdir -p $out
common="--no-roofline --scope host --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check"
run() { tag=$1; n=$2; coll=$3; shift 3; env "$@" $b/vkshmrun -n $n $b/vkshmem-bench $common --collective $coll > $out/$tag.txt < /dev/null; grep -hE '^ *[a-z]+ +host ' $out/$tag.txt | awk -v t="$tag" '{print t, $1, $3, $7, $13}' >> $out/summary.txt; }
for r in 1 2; do
 for c in 32 64 128 256 512; do
  run r$r-4pe-reduce-c$c 4 reduce VKS_TUNE_CHUNK=$c
  run r$r-8pe-fcollect-c$c 8 fcollect VKS_TUNE_CHUNK=$c
 done
 for c in 16 32 64 128 256; do
  run r$r-8pe-reduce-c2$c 8 reduce VKS_TUNE_CHUNK2=$c
 done
 for c in 0 64 128 256; do
  if [ $c = 0 ]; then run r$r-4pe-bcast-c0 4 broadcast X=1; else run r$r-4pe-bcast-c$c 4 broadcast VKS_TUNE_STREAMS=2 VKS_TUNE_CHUNK=$c; fi
  if [ $c = 0 ]; then run r$r-2pe-reduce-c0 2 reduce X=1; else run r$r-2pe-reduce-c$c 2 reduce VKS_TUNE_STREAMS=2 VKS_TUNE_CHUNK=$c; fi
 done
done
echo done >> $out/summary.txt
