// The GPU's own bandwidth for each read/write mix the host collectives use
// (nvcc on the device machine; see README.md): a copy (1 read : 1 write, the
// roofline), a push of one source to k dests (1 : k, the wide push of
// broadcast, fcollect, collect and a reduction's result), k sources summed
// into one dest (k : 1, the wide reduction), writes alone and reads alone.
// Each is a grid-stride loop over 16-byte vectors in workgroups of 256, timed
// with CUDA events, the best of several launches, over a grid of 1 to 32
// blocks per SM; GB/s counts every byte read and written, as copy_shapes and
// torch_copy.py do.
//
// nvcc -O3 -o mixes mixes.cu && ./mixes [MiB ...]   (default 256 1024)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("cuda error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

struct Ptrs { uint4 *p[8]; };

// k dests, one source.
template <int K>
__global__ void push(const uint4 *__restrict__ src, Ptrs dst, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint4 v = src[i];
#pragma unroll
    for (int j = 0; j < K; j++) dst.p[j][i] = v;
  }
}

// k sources (u32 sum), one dest.
template <int K>
__global__ void sum(Ptrs src, uint4 *__restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint4 a = src.p[0][i];
#pragma unroll
    for (int j = 1; j < K; j++) {
      uint4 b = src.p[j][i];
      a.x += b.x; a.y += b.y; a.z += b.z; a.w += b.w;
    }
    dst[i] = a;
  }
}

__global__ void fill(uint4 *__restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = make_uint4(i, 1, 2, 3);
}

__global__ void readall(const uint4 *__restrict__ src, uint4 *out, size_t n) {
  uint4 a = make_uint4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint4 b = src[i];
    a.x ^= b.x; a.y ^= b.y; a.z ^= b.z; a.w ^= b.w;
  }
  if (a.x == 0x12345678u) out[0] = a;  // keeps the loads
}

int main(int argc, char **argv) {
  std::vector<size_t> mibs;
  for (int i = 1; i < argc; i++) mibs.push_back(atoll(argv[i]));
  if (mibs.empty()) mibs = {256, 1024};
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("# %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  size_t most = 0;
  for (size_t m : mibs) most = m > most ? m : most;
  uint4 *buf[9];
  for (int i = 0; i < 9; i++) {
    CK(cudaMalloc(&buf[i], most << 20));
    CK(cudaMemset(buf[i], i, most << 20));
  }
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const int wg = 256;
  printf("# shape MiB blocks_per_sm us GB/s(read+write) traffic_per_source_byte\n");
  for (size_t mib : mibs) {
    size_t n = (mib << 20) / 16;
    struct M { const char *name; int reads, writes; };
    M ms[] = {{"copy", 1, 1}, {"push2", 1, 2}, {"push4", 1, 4}, {"push8", 1, 8},
              {"sum2", 2, 1}, {"sum4", 4, 1}, {"sum8", 8, 1}, {"write", 0, 1}, {"read", 1, 0}};
    for (const M &m : ms) {
      float best = 1e30f; int best_b = 0;
      for (int bps : {1, 2, 4, 8, 16, 32}) {
        int blocks = bps * prop.multiProcessorCount;
        for (int rep = 0; rep < 4; rep++) {
          Ptrs d{}, s{};
          for (int j = 0; j < 8; j++) { d.p[j] = buf[1 + j]; s.p[j] = buf[j]; }
          CK(cudaEventRecord(e0));
          if (!strcmp(m.name, "copy")) push<1><<<blocks, wg>>>(buf[0], d, n);
          else if (!strcmp(m.name, "push2")) push<2><<<blocks, wg>>>(buf[0], d, n);
          else if (!strcmp(m.name, "push4")) push<4><<<blocks, wg>>>(buf[0], d, n);
          else if (!strcmp(m.name, "push8")) push<8><<<blocks, wg>>>(buf[0], d, n);
          else if (!strcmp(m.name, "sum2")) sum<2><<<blocks, wg>>>(s, buf[8], n);
          else if (!strcmp(m.name, "sum4")) sum<4><<<blocks, wg>>>(s, buf[8], n);
          else if (!strcmp(m.name, "sum8")) sum<8><<<blocks, wg>>>(s, buf[8], n);
          else if (!strcmp(m.name, "write")) fill<<<blocks, wg>>>(buf[8], n);
          else readall<<<blocks, wg>>>(buf[0], buf[8], n);
          CK(cudaEventRecord(e1));
          CK(cudaEventSynchronize(e1));
          CK(cudaGetLastError());
          float ms_ = 0;
          CK(cudaEventElapsedTime(&ms_, e0, e1));
          if (rep > 0 && ms_ < best) { best = ms_; best_b = bps; }
        }
      }
      double bytes = (double)(mib << 20) * (m.reads + m.writes);
      printf("%s %zu %d %.1f %.0f %d\n", m.name, mib, best_b, best * 1e3, bytes / (best * 1e-3) / 1e9,
             m.reads + m.writes);
    }
  }
  return 0;
}
