#!/bin/bash
cd /work/main
P=target/debug/examples/collectives_check
R=target/debug/vkshmrun
t() { local label="$1"; shift; local s=$(date +%s.%N); "$@" < /dev/null > /tmp/run.out 2>&1; local rc=$?; printf "%6.1f rc=%d %s\n" $(echo "$(date +%s.%N) - $s" | bc) $rc "$label"; }
t "plain 1 full" $R -n 1 $P
t "plain 2 full" $R -n 2 $P
t "plain 3 device-quick" $R -n 3 $P --device-quick
t "plain 4 device-quick" $R -n 4 $P --device-quick
t "plain 8 quick" $R -n 8 $P --quick
t "plain 1 host-only" $R -n 1 $P --host-only
t "plain 2 host-only" $R -n 2 $P --host-only
t "staged:2 3 device-quick" env VKSHMEM_TRANSPORT=staged:2 $R -n 3 $P --device-quick
t "staged:2 5 quick" env VKSHMEM_TRANSPORT=staged:2 $R -n 5 $P --quick
t "staged 1 full" env VKSHMEM_TRANSPORT=staged $R -n 1 $P
t "staged 2 host-only" env VKSHMEM_TRANSPORT=staged $R -n 2 $P --host-only
t "staged 4 host-only" env VKSHMEM_TRANSPORT=staged $R -n 4 $P --host-only
t "staged 8 quick" env VKSHMEM_TRANSPORT=staged $R -n 8 $P --quick
t "leader 2 host-only" env VKSHMEM_SUBMIT=leader VKSHMEM_HOST_MAPPED_MAX=0 $R -n 2 $P --host-only
t "leader 3 host-only" env VKSHMEM_SUBMIT=leader VKSHMEM_HOST_MAPPED_MAX=0 $R -n 3 $P --host-only
t "leader 8 host-only" env VKSHMEM_SUBMIT=leader VKSHMEM_HOST_MAPPED_MAX=0 $R -n 8 $P --host-only
t "unmapped 3 host-only" env VKSHMEM_HEAP_MAPPING=off $R -n 3 $P --host-only
t "unmapped staged 3 host-only" env VKSHMEM_HEAP_MAPPING=off VKSHMEM_TRANSPORT=staged $R -n 3 $P --host-only
