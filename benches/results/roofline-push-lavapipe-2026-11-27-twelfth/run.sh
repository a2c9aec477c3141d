#!/bin/sh
# Push roofline A/B: old bench (copy shapes only) against new (copies and pushes), 2 and 4 PEs at 4 MiB, interleaved.
OUT=$1; mkdir -p $OUT
export VKSHMEM_SYMMETRIC_SIZE=256M
for r in 1 2; do
  for n in 4 2; do
    for v in old new; do
      if [ $v = old ]; then B=/tmp/bench-old; else B=/work/main/target/release/vkshmem-bench; fi
      /work/main/target/release/vkshmrun -n $n $B --collective broadcast,collect,fcollect,alltoall,reduce --scope host --min-bytes 4M --max-bytes 4M --iters 10 --warmup 2 < /dev/null > $OUT/$v-${n}pe-r$r.txt 2>&1
      echo "$v ${n}pe r$r: $(grep -E '^ +(broad|coll|fcoll|allto|reduce)' $OUT/$v-${n}pe-r$r.txt | awk '{printf "%s %s/%s ", $1, $10, $11}') $(grep -o 'roofline: [^(]*' $OUT/$v-${n}pe-r$r.txt | head -1)"
    done
  done
done
