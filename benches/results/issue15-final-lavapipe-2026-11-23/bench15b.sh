#!/bin/bash
# Issue 15, final: before (30823a0) / after (8b00228) / after forced through kernels / Open MPI,
# small messages on 2, 4, 8 PEs, two rounds alternating; then a threshold sweep and large messages.
B=/tmp/before-target/release; A=/tmp/after-target/release; O=/tmp/b15b; M=/work/main/target/release/mpi_bench
C=barrier,broadcast,fcollect,alltoall,reduce
for round in 1 2; do
for n in 2 4 8; do
  $B/vkshmrun -n $n $B/vkshmem-bench --collective $C --scope host --min-bytes 8 --max-bytes 8 --iters 300 --warmup 20 --csv $O/before-n$n-r$round.csv > $O/before-n$n-r$round.txt 2>&1
  $A/vkshmrun -n $n $A/vkshmem-bench --collective $C --scope host --min-bytes 8 --max-bytes 8 --iters 3000 --warmup 100 --csv $O/after-n$n-r$round.csv > $O/after-n$n-r$round.txt 2>&1
  VKSHMEM_HOST_MAPPED_MAX=0 $A/vkshmrun -n $n $A/vkshmem-bench --collective $C --scope host --min-bytes 8 --max-bytes 8 --iters 1000 --warmup 50 --csv $O/kernel-n$n-r$round.csv > $O/kernel-n$n-r$round.txt 2>&1
  mpirun --allow-run-as-root --oversubscribe -n $n $M --collective $C --max-bytes 8 --iters 3000 > $O/mpi-n$n-r$round.csv 2>&1
done
done
for n in 2 4; do
  $A/vkshmrun -n $n $A/vkshmem-bench --collective broadcast,fcollect,alltoall,reduce --scope host --min-bytes 8 --max-bytes 16K --step-factor 4 --iters 300 --csv $O/sweep-host-n$n.csv > $O/sweep-host-n$n.txt 2>&1
  VKSHMEM_HOST_MAPPED_MAX=0 $A/vkshmrun -n $n $A/vkshmem-bench --collective broadcast,fcollect,alltoall,reduce --scope host --min-bytes 8 --max-bytes 16K --step-factor 4 --iters 100 --csv $O/sweep-kernel-n$n.csv > $O/sweep-kernel-n$n.txt 2>&1
done
for round in 1 2; do
for n in 2 4; do
  $B/vkshmrun -n $n $B/vkshmem-bench --collective broadcast,fcollect,alltoall,reduce --scope host --min-bytes 1M --max-bytes 4M --iters 20 --csv $O/large-before-n$n-r$round.csv > $O/large-before-n$n-r$round.txt 2>&1
  $A/vkshmrun -n $n $A/vkshmem-bench --collective broadcast,fcollect,alltoall,reduce --scope host --min-bytes 1M --max-bytes 4M --iters 20 --csv $O/large-after-n$n-r$round.csv > $O/large-after-n$n-r$round.txt 2>&1
done
done
echo DONE
