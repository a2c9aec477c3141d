#!/bin/sh
# The Show's device line, A (336b5a1) and G (086d2c0) interleaved
for r in 1 2; do for b in A G; do
/tmp/rel$b/vkshmrun -n 2 /tmp/rel$b/vkshmem-bench --scope work_groups,work_group --min-bytes 4M --max-bytes 4M --iters 20 --warmup 2 --check --collective broadcast,collect,fcollect,alltoall,alltoalls,reduce --type float --csv /tmp/abdev/dev-$b-$r.csv > /tmp/abdev/dev-$b-$r.txt 2>&1
done; done
