#!/bin/bash
cd /work/main
F="--features vkshmem/mpi,vkshmem-bench/mpi"
for t in $(cargo test --workspace $F --test launcher -- --list 2>/dev/null | grep ': test$' | sed 's/: test$//'); do
  s=$(date +%s.%N)
  cargo test --workspace $F --test launcher -- --exact $t > /tmp/tt/$t.log 2>&1
  rc=$?
  e=$(date +%s.%N)
  printf "%7.1f %d %s\n" $(echo "$e - $s" | bc) $rc $t >> /tmp/tt/times.txt
done
echo done >> /tmp/tt/times.txt
