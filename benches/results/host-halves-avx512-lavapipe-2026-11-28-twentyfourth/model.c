#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#define N (1u<<20)
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
__attribute__((noinline)) static void old(const uint16_t*a,const uint16_t*b,uint16_t*o,size_t n){
  for(size_t i=0;i<n;i+=8){__m256 x=_mm256_cvtph_ps(_mm_loadu_si128((void*)(a+i))),y=_mm256_cvtph_ps(_mm_loadu_si128((void*)(b+i)));
    _mm_storeu_si128((void*)(o+i),_mm256_cvtps_ph(_mm256_add_ps(x,y),_MM_FROUND_TO_NEAREST_INT));}}
__attribute__((noinline)) static void neu(const uint16_t*a,const uint16_t*b,uint16_t*o,size_t n){
  for(size_t i=0;i<n;i+=16){__m512 x=_mm512_cvtph_ps(_mm256_loadu_si256((void*)(a+i))),y=_mm512_cvtph_ps(_mm256_loadu_si256((void*)(b+i)));
    _mm256_storeu_si256((void*)(o+i),_mm512_cvtps_ph(_mm512_add_ps(x,y),_MM_FROUND_TO_NEAREST_INT));}}
int main(){uint16_t*a=aligned_alloc(64,2*N),*b=aligned_alloc(64,2*N),*o1=aligned_alloc(64,2*N),*o2=aligned_alloc(64,2*N);
  srand(1); for(size_t i=0;i<N;i++){a[i]=rand();b[i]=rand();}
  old(a,b,o1,N); neu(a,b,o2,N); printf("same %d\n", memcmp(o1,o2,2*N)==0);
  for(int r=0;r<3;r++){ double bo=1e9,bn=1e9; for(int it=0;it<200;it++){double t=now();old(a,b,o1,N);t=now()-t;if(t<bo)bo=t; t=now();neu(a,b,o2,N);t=now()-t;if(t<bn)bn=t;}
  printf("old %.1f us new %.1f us (%.2fx)\n",bo*1e6,bn*1e6,bo/bn);}}
