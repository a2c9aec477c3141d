// 2 threads, each reduces its half of a 4 MiB float sum of 2 sources,
// 4 KiB chunks combined into an L1 buffer, rep movsb'd to both dests.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <stdint.h>
#include <immintrin.h>
#define N (4<<20)
#define CH 4096
static char *src[2], *dst[2];
static int off, bufoff, mode;
static pthread_barrier_t bar;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static inline void movsb(void*d,const void*s,size_t n){__asm__ volatile("rep movsb":"+D"(d),"+S"(s),"+c"(n)::"memory");}
__attribute__((target("avx2"))) static void comb(float*o,const float*a,const float*b,size_t n){for(size_t i=0;i<n;i++)o[i]=a[i]+b[i];}
static void *work(void*arg){int me=(int)(intptr_t)arg; static __thread char l1[CH+128] __attribute__((aligned(64)));
 size_t lo=me*(N/2), hi=lo+N/2; double best=1e9;
 for(int it=0;it<60;it++){pthread_barrier_wait(&bar); double t=now();
  for(size_t at=lo;at<hi;){size_t n=CH; 
    if(mode==2 && at==lo){ size_t h=(64-((uintptr_t)(dst[0]+off+at))%64)%64; if(h) n=h; }
    if(at+n>hi)n=hi-at;
    char*into=l1+(mode>=1?((uintptr_t)(dst[0]+off+at))%64:0);
    comb((float*)into,(float*)(src[0]+off+at),(float*)(src[1]+off+at),n/4);
    movsb(dst[0]+off+at,into,n); movsb(dst[1]+off+at,into,n); at+=n;}
  pthread_barrier_wait(&bar); t=now()-t; if(t<best)best=t;}
 if(me==0)printf("off %d mode %d: %.1f us\n",off,mode,best*1e6); return 0;}
int main(int c,char**v){off=atoi(v[1]);mode=atoi(v[2]);for(int i=0;i<2;i++){src[i]=aligned_alloc(4096,N+4096);dst[i]=aligned_alloc(4096,N+4096);memset(src[i],1,N+4096);memset(dst[i],0,N+4096);}
 pthread_barrier_init(&bar,0,2);pthread_t t[2];for(int i=0;i<2;i++)pthread_create(&t[i],0,work,(void*)(intptr_t)i);for(int i=0;i<2;i++)pthread_join(t[i],0);}
