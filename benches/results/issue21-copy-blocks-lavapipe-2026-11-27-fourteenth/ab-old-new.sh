#!/bin/bash
# Interleaved A/B, no roofline: old binaries (/tmp/ab/old) vs new (target/release).
cd /work/main
N=${N:-2}; C=${C:-alltoall,alltoalls}; R=${R:-3}
for r in $(seq 1 $R); do
  for arm in old new; do
    if [ $arm = old ]; then b=/tmp/ab/old; else b=target/release; fi
    VKSHMEM_SYMMETRIC_SIZE=256M $b/vkshmrun -n $N $b/vkshmem-bench --collective $C --scope host --min-bytes ${S:-4M} --max-bytes ${S:-4M} --iters ${I:-20} --warmup 3 --no-roofline --check ${X:-} --csv /tmp/ab/$arm-n$N-r$r.csv < /dev/null > /tmp/ab/$arm-n$N-r$r.txt 2>&1
    echo "$arm n=$N r=$r $(cut -d, -f1,9,16 /tmp/ab/$arm-n$N-r$r.csv | tail -n +2 | awk -F, '{printf "%s %.0f w=%s  ", $1, $2, $3}')"
  done
done
