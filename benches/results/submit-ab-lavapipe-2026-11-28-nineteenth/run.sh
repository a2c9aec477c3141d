#!/bin/bash
# A/B: VKSHMEM_SUBMIT each vs leader on lavapipe, sweep 4 KiB-4 MiB, median us
export VKSHMEM_SYMMETRIC_SIZE=256M
cd /work/main; b=${BIN:-target/release}
out=$1; shift; mkdir -p $out
for r in 1 2; do for n in 2 4 8; do for s in each leader; do
 t0=$(date +%s.%N)
 VKSHMEM_SUBMIT=$s $b/vkshmrun -n $n $b/vkshmem-bench --no-roofline --scope host --min-bytes 4K --max-bytes 4M --step-factor 4 --iters 30 --warmup 3 --check --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --type float --csv $out/$s-$n-$r.csv < /dev/null > $out/$s-$n-$r.txt 2>&1
 echo "$s n=$n r=$r rc=$? $(echo "$(date +%s.%N) - $t0" | bc) s"
done; done; done
