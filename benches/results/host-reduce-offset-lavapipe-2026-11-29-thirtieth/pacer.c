#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <sys/syscall.h>
struct sched_attr { uint32_t size, sched_policy; uint64_t sched_flags; int32_t sched_nice; uint32_t sched_priority; uint64_t sched_runtime, sched_deadline, sched_period; uint32_t util_min, util_max; };
static long period_us; static uint64_t slice;
static void *run(void *a){ int cpu=(int)(intptr_t)a; cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu,&s); pthread_setaffinity_np(pthread_self(),sizeof s,&s);
 if(slice){struct sched_attr at={0}; at.size=sizeof at; at.sched_runtime=slice; if(syscall(SYS_sched_setattr,0,&at,0)) perror("setattr");}
 struct timespec t={0,period_us*1000}; for(;;) nanosleep(&t,0); }
int main(int c,char**v){ period_us=atol(v[1]); slice=strtoull(v[2],0,10); int n=sysconf(_SC_NPROCESSORS_ONLN); pthread_t t; for(int i=0;i<n;i++) pthread_create(&t,0,run,(void*)(intptr_t)i); pause(); }
