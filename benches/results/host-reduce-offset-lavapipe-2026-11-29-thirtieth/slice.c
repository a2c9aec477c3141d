#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/syscall.h>
struct sched_attr { uint32_t size, sched_policy; uint64_t sched_flags; int32_t sched_nice; uint32_t sched_priority; uint64_t sched_runtime, sched_deadline, sched_period; uint32_t util_min, util_max; };
int main(int c, char **v){ struct sched_attr a={0}; a.size=sizeof a; a.sched_policy=0; a.sched_runtime=strtoull(v[1],0,10);
 if(syscall(SYS_sched_setattr,0,&a,0)){perror("sched_setattr");return 1;}
 struct sched_attr g={0}; syscall(SYS_sched_getattr,0,&g,sizeof g,0); fprintf(stderr,"slice now %llu ns\n",(unsigned long long)g.sched_runtime);
 execvp(v[2],v+2); perror("exec"); return 1;}
