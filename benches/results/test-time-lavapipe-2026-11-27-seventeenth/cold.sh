#!/bin/bash
cd /work/main
F="--features vkshmem/mpi,vkshmem-bench/mpi"
for r in 1; do
for u in u32 auto; do
  rm -rf /tmp/cold-$u; mkdir -p /tmp/cold-$u
  s=$(date +%s.%N)
  XDG_CACHE_HOME=/tmp/cold-$u VKSHMEM_WIDE_UNIT=$u cargo test --workspace $F --test launcher -- --exact collectives_conform_on_1_to_4_and_8_pes bench_check_reports_no_wrong_elements > /tmp/tt/cold-$u.log 2>&1
  rc=$?
  e=$(date +%s.%N)
  printf "%7.1f %d %s\n" $(echo "$e - $s" | bc) $rc $u >> /tmp/tt/cold.txt
done
done
echo done >> /tmp/tt/cold.txt
