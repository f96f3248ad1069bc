#include "ddp/comm/backend.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace ddp::comm {
namespace {

class HostMemory final : public Memory {
 public:
  void* allocate(size_t bytes) override {
    // 64-byte alignment: vectorised reductions, and no false sharing between buffers.
    void* ptr = std::aligned_alloc(64, ((bytes + 63) / 64) * 64 + 64);
    if (ptr == nullptr) throw std::bad_alloc();
    return ptr;
  }
  void release(void* ptr) noexcept override { std::free(ptr); }
  void copyFromHost(void* dst, const void* src, size_t bytes) override {
    if (bytes != 0) std::memcpy(dst, src, bytes);
  }
  void copyToHost(void* dst, const void* src, size_t bytes) override {
    if (bytes != 0) std::memcpy(dst, src, bytes);
  }
};

}  // namespace

BackendOptions BackendOptions::fromEnvironment(const Environment& environment) {
  BackendOptions options;
  options.interface = environment.get(env::kGlooIfname).value_or("");
  options.shmRanksPerHost = static_cast<int>(environment.getInt(env::kMpiShmRanksPerHost, 1, 1 << 20).value_or(0));
  return options;
}

Memory& hostMemory() {
  static HostMemory memory;
  return memory;
}

}  // namespace ddp::comm
