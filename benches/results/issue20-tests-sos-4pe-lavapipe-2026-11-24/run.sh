#!/bin/bash
# Compile and run tests-sos unit and spec-example C tests on 4 PEs.
cd /tmp/sos/test
OUT=/tmp/sosrun
: > $OUT/results.txt
for f in ${ONLY:-spec-example/*.c unit/*.c}; do
  n=$(basename $f .c); d=$(dirname $f)
  case $n in hybrid_mpi*) continue;; esac
  if ! /work/main/target/release/oshcc -std=gnu11 -O1 -w -DENABLE_DEPRECATED_TESTS -I/tmp/sos/test/include -pthread -o $OUT/$d-$n $f > $OUT/$d-$n.cc.txt 2>&1; then
    echo "$d/$n COMPILE_FAIL" >> $OUT/results.txt; continue
  fi
  timeout -k 5 60 /work/main/target/release/oshrun -n 4 $OUT/$d-$n > $OUT/$d-$n.out.txt 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then echo "$d/$n PASS" >> $OUT/results.txt; else echo "$d/$n FAIL rc=$rc" >> $OUT/results.txt; fi
done
echo DONE >> $OUT/results.txt
