// 2 threads, each reduces its half of a 4 MiB float sum of 2 sources, 4 KiB chunks combined into
// an L1 buffer and moved to both dests. Modes: 0 rep movsb to cold dests (the library's out of
// place); 1 in place (the dests are the sources); 2 streaming stores to both dests; 3 clzero the
// dest lines, then rep movsb; 4 clzero, then plain 256-bit stores.
// Median and min of 60 calls per mode, modes interleaved over rounds.
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
static int mode;
static pthread_barrier_t bar;
static double res[60];
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static inline void movsb(void*d,const void*s,size_t n){__asm__ volatile("rep movsb":"+D"(d),"+S"(s),"+c"(n)::"memory");}
__attribute__((target("avx2"))) static void comb(float*o,const float*a,const float*b,size_t n){for(size_t i=0;i<n;i++)o[i]=a[i]+b[i];}
__attribute__((target("avx2"))) static void nt(char*d,const char*s,size_t n){for(size_t i=0;i<n;i+=32)_mm256_stream_si256((__m256i*)(d+i),_mm256_load_si256((const __m256i*)(s+i)));}
__attribute__((target("avx2"))) static void plain(char*d,const char*s,size_t n){for(size_t i=0;i<n;i+=32)_mm256_store_si256((__m256i*)(d+i),_mm256_load_si256((const __m256i*)(s+i)));}
static void clz(char*d,size_t n){for(size_t i=0;i<n;i+=64)__asm__ volatile("clzero"::"a"(d+i):"memory");}
static void *work(void*arg){int me=(int)(intptr_t)arg; static __thread char l1[CH] __attribute__((aligned(64)));
 size_t lo=me*(N/2), hi=lo+N/2;
 for(int it=0;it<62;it++){pthread_barrier_wait(&bar); double t=now();
  char *d0=mode==1?src[0]:dst[0], *d1=mode==1?src[1]:dst[1];
  for(size_t at=lo;at<hi;at+=CH){
    comb((float*)l1,(float*)(src[0]+at),(float*)(src[1]+at),CH/4);
    switch(mode){
     case 0: case 1: movsb(d0+at,l1,CH); movsb(d1+at,l1,CH); break;
     case 2: nt(d0+at,l1,CH); nt(d1+at,l1,CH); break;
     case 3: clz(d0+at,CH); clz(d1+at,CH); movsb(d0+at,l1,CH); movsb(d1+at,l1,CH); break;
     case 4: clz(d0+at,CH); clz(d1+at,CH); plain(d0+at,l1,CH); plain(d1+at,l1,CH); break;
    }}
  if(mode==2||mode==3||mode==4)_mm_sfence();
  pthread_barrier_wait(&bar); t=now()-t; if(me==0&&it>=2)res[it-2]=t*1e6;}
 return 0;}
int main(int c,char**v){for(int i=0;i<2;i++){src[i]=aligned_alloc(4096,N);dst[i]=aligned_alloc(4096,N);memset(src[i],0,N);memset(dst[i],0,N);}
 pthread_barrier_init(&bar,0,2);
 for(int r=0;r<4;r++){ for(mode=0;mode<5;mode++){pthread_t t[2];for(int i=0;i<2;i++)pthread_create(&t[i],0,work,(void*)(intptr_t)i);for(int i=0;i<2;i++)pthread_join(t[i],0);
   qsort(res,60,sizeof(double),cmp); printf("m%d %5.1f/%5.1f  ",mode,res[30],res[0]);} printf("\n"); fflush(stdout);}}
