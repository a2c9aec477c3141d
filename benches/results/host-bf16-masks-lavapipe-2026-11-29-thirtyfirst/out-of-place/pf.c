// 2 threads, each reduces its half of a 4 MiB float sum of 2 sources, 4 KiB chunks combined
// into an L1 buffer, rep movsb'd to both dests. mode 0: as the library; 1: prefetch the next
// chunk's sources (prefetcht0) before the movsbs; 2: prefetch 2 chunks ahead; 3: chunk 2 KiB; 4: chunk 8 KiB
// Prints median and min of 60 calls, per mode, modes interleaved over rounds.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <stdint.h>
#include <immintrin.h>
#define N (4<<20)
static char *src[2], *dst[2];
static int mode;
static pthread_barrier_t bar;
static double res[60];
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static inline void movsb(void*d,const void*s,size_t n){__asm__ volatile("rep movsb":"+D"(d),"+S"(s),"+c"(n)::"memory");}
__attribute__((target("avx2"))) static void comb(float*o,const float*a,const float*b,size_t n){for(size_t i=0;i<n;i++)o[i]=a[i]+b[i];}
static void pf(const char*p,size_t n){for(size_t i=0;i<n;i+=64)_mm_prefetch(p+i,_MM_HINT_T0);}
static void *work(void*arg){int me=(int)(intptr_t)arg; static __thread char l1[8192+128] __attribute__((aligned(64)));
 size_t lo=me*(N/2), hi=lo+N/2; size_t CH=mode==3?2048:mode==4?8192:4096; int ahead=mode==1?1:mode==2?2:0;
 for(int it=0;it<62;it++){pthread_barrier_wait(&bar); double t=now();
  for(size_t at=lo;at<hi;at+=CH){
    comb((float*)l1,(float*)(src[0]+at),(float*)(src[1]+at),CH/4);
    if(ahead){size_t nx=at+ahead*CH; if(nx<hi){pf(src[0]+nx,CH);pf(src[1]+nx,CH);}}
    movsb(dst[0]+at,l1,CH); movsb(dst[1]+at,l1,CH);}
  pthread_barrier_wait(&bar); t=now()-t; if(me==0&&it>=2)res[it-2]=t*1e6;}
 return 0;}
int main(int c,char**v){for(int i=0;i<2;i++){src[i]=aligned_alloc(4096,N);dst[i]=aligned_alloc(4096,N);memset(src[i],1,N);memset(dst[i],0,N);}
 pthread_barrier_init(&bar,0,2);
 for(int r=0;r<4;r++){ for(mode=0;mode<5;mode++){pthread_t t[2];for(int i=0;i<2;i++)pthread_create(&t[i],0,work,(void*)(intptr_t)i);for(int i=0;i<2;i++)pthread_join(t[i],0);
   qsort(res,60,sizeof(double),cmp); printf("m%d %5.1f/%5.1f  ",mode,res[30],res[0]);} printf("\n");}}
