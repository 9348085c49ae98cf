// bench/cpp/system_memory.cu - what this GPU says about memory it shares with host threads:
// the device properties Backend::alloc_system chooses by (CUDA: pinned host memory where
// the link has native atomics, else managed memory where CPU and GPU may access it at once),
// and which of the two xbarrier's SystemBarrier gets here. Not part of the cargo build: a
// standalone program (CI compiles it; it needs a GPU to run). Build and run from the
// repository root:
//   nvcc -std=c++17 -arch=sm_90 -O3 -o /tmp/system_memory bench/cpp/system_memory.cu
//   /tmp/system_memory
#include <cstdio>

#include <cuda_runtime.h>

int main() {
  int device = 0;
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    std::printf("no CUDA device\n");
    return 1;
  }
  const struct {
    cudaDeviceAttr attr;
    const char* name;
  } attrs[] = {
      {cudaDevAttrHostNativeAtomicSupported, "hostNativeAtomicSupported"},
      {cudaDevAttrConcurrentManagedAccess, "concurrentManagedAccess"},
      {cudaDevAttrPageableMemoryAccess, "pageableMemoryAccess"},
      {cudaDevAttrPageableMemoryAccessUsesHostPageTables, "pageableMemoryAccessUsesHostPageTables"},
      {cudaDevAttrCanUseHostPointerForRegisteredMem, "canUseHostPointerForRegisteredMem"},
  };
  std::printf("%s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  int native = 0, managed = 0;
  for (const auto& a : attrs) {
    int v = 0;
    cudaDeviceGetAttribute(&v, a.attr, device);
    std::printf("  %-40s %d\n", a.name, v);
    if (a.attr == cudaDevAttrHostNativeAtomicSupported) native = v;
    if (a.attr == cudaDevAttrConcurrentManagedAccess) managed = v;
  }
  std::printf("SystemBarrier memory here: %s\n",
              native ? "pinned host memory (cuMemHostAlloc)"
                     : managed ? "managed memory (cuMemAllocManaged)" : "none: Error::Unsupported");
  return 0;
}
