#!/bin/bash
# Issue 15 before/after: small host collectives, 2/4/8 PEs, alternating binaries.
B=/tmp/before-target/release; A=/work/main/target/release; O=/tmp/b15
C=barrier,broadcast,fcollect,alltoall,reduce
for round in 1 2; do
for n in 2 4 8; do
  $B/vkshmrun -n $n $B/vkshmem-bench --collective $C --scope host --min-bytes 8 --max-bytes 8 --iters 300 --warmup 20 --csv $O/before-n$n-r$round.csv > $O/before-n$n-r$round.txt 2>&1
  $A/vkshmrun -n $n $A/vkshmem-bench --collective $C --scope host --min-bytes 8 --max-bytes 8 --iters 3000 --warmup 100 --csv $O/after-n$n-r$round.csv > $O/after-n$n-r$round.txt 2>&1
  VKSHMEM_HOST_MAPPED_MAX=0 $A/vkshmrun -n $n $A/vkshmem-bench --collective $C --scope host --min-bytes 8 --max-bytes 8 --iters 1000 --warmup 50 --csv $O/kernel-n$n-r$round.csv > $O/kernel-n$n-r$round.txt 2>&1
  mpirun --allow-run-as-root --oversubscribe -n $n $A/mpi_bench --collective $C --max-bytes 8 --iters 3000 > $O/mpi-n$n-r$round.csv 2>&1
done
done
for n in 2 4; do
  $B/vkshmrun -n $n $B/vkshmem-bench --collective broadcast,fcollect,alltoall,reduce --scope host --min-bytes 1M --max-bytes 4M --iters 10 --csv $O/before-large-n$n.csv > $O/before-large-n$n.txt 2>&1
  $A/vkshmrun -n $n $A/vkshmem-bench --collective broadcast,fcollect,alltoall,reduce --scope host --min-bytes 1M --max-bytes 4M --iters 10 --csv $O/after-large-n$n.csv > $O/after-large-n$n.txt 2>&1
done
echo DONE
