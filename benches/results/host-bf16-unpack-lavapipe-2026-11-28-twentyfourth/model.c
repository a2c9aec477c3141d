#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#define N (1u<<20)
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static inline __m512i rounded(__m512 v){__m512i x=_mm512_castps_si512(v);
  __m512i lsb=_mm512_and_si512(_mm512_srli_epi32(x,16),_mm512_set1_epi32(1));
  __m512i bias=_mm512_add_epi32(_mm512_set1_epi32(0x7fff),lsb);
  __m512i quiet=_mm512_or_si512(x,_mm512_set1_epi32(0x00400000));
  __mmask16 nan=_mm512_cmp_ps_mask(v,v,_CMP_UNORD_Q);
  return _mm512_mask_blend_epi32(nan,_mm512_add_epi32(x,bias),quiet);}
__attribute__((noinline)) static void old(const uint16_t*a,const uint16_t*b,uint16_t*o,size_t n){
  for(size_t i=0;i<n;i+=16){
    __m512 x=_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((void*)(a+i))),16));
    __m512 y=_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((void*)(b+i))),16));
    __m256i h=_mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded(_mm512_add_ps(x,y)),16));
    _mm256_storeu_si256((void*)(o+i),h);}}
__attribute__((noinline)) static void neu(const uint16_t*a,const uint16_t*b,uint16_t*o,size_t n){
  __m512i z=_mm512_setzero_si512();
  for(size_t i=0;i<n;i+=32){
    __m512i ha=_mm512_loadu_si512((void*)(a+i)), hb=_mm512_loadu_si512((void*)(b+i));
    __m512 xl=_mm512_castsi512_ps(_mm512_unpacklo_epi16(z,ha)), xh=_mm512_castsi512_ps(_mm512_unpackhi_epi16(z,ha));
    __m512 yl=_mm512_castsi512_ps(_mm512_unpacklo_epi16(z,hb)), yh=_mm512_castsi512_ps(_mm512_unpackhi_epi16(z,hb));
    __m512i rl=_mm512_srli_epi32(rounded(_mm512_add_ps(xl,yl)),16), rh=_mm512_srli_epi32(rounded(_mm512_add_ps(xh,yh)),16);
    _mm512_storeu_si512((void*)(o+i),_mm512_packus_epi32(rl,rh));}}
int main(){uint16_t*a=aligned_alloc(64,2*N),*b=aligned_alloc(64,2*N),*o1=aligned_alloc(64,2*N),*o2=aligned_alloc(64,2*N);
  srand(1); for(size_t i=0;i<N;i++){a[i]=rand();b[i]=rand();}
  old(a,b,o1,N); neu(a,b,o2,N); printf("same %d\n", memcmp(o1,o2,2*N)==0);
  for(int r=0;r<3;r++){ double bo=1e9,bn=1e9; for(int it=0;it<200;it++){double t=now();old(a,b,o1,N);t=now()-t;if(t<bo)bo=t; t=now();neu(a,b,o2,N);t=now()-t;if(t<bn)bn=t;}
  printf("old %.1f us new %.1f us (%.2fx)\n",bo*1e6,bn*1e6,bo/bn);}}
