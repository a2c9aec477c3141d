// Two threads, each copying 4 MiB between its own two buffers (8 MiB pairs x2 live),
// bandwidth per 25 ms window over 8 s, printed as one line per 10 windows.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#define SZ (4<<20)
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double res[2][400];
static pthread_barrier_t bar;
static void* run(void*a){long id=(long)a; char*s=aligned_alloc(4096,SZ),*d=aligned_alloc(4096,SZ);memset(s,1,SZ);memset(d,2,SZ);
 for(int w=0;w<320;w++){pthread_barrier_wait(&bar);double t0=now();long n=0;while(now()-t0<0.025){memcpy(d,s,SZ);__asm__ volatile("":::"memory");n++;}res[id][w]=2.0*n*SZ/(now()-t0)/1e9;}
 return 0;}
int main(){pthread_t t[2];pthread_barrier_init(&bar,0,2);for(long i=0;i<2;i++)pthread_create(&t[i],0,run,(void*)i);for(int i=0;i<2;i++)pthread_join(t[i],0);
 for(int w=0;w<320;w++){printf("%4.0f",res[0][w]+res[1][w]);if(w%16==15)printf("\n");}}
