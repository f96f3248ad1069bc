#include "ddp/comm/registry.hpp"

#include "ddp/comm/mpi_backend.hpp"
#include "ddp/config.hpp"

#if DDP_HAVE_GLOO
#include "ddp/comm/gloo_backend.hpp"
#endif
#if DDP_HAVE_NCCL
#include "ddp/comm/nccl_backend.hpp"
#endif

namespace ddp::comm {

const BackendRegistry& builtinBackends() {
  static const BackendRegistry registry = [] {
    BackendRegistry r;
    r.add("mpi", makeMpiBackend);
#if DDP_HAVE_GLOO
    r.add("gloo", makeGlooBackend);
#endif
#if DDP_HAVE_NCCL
    r.add("nccl", makeNcclBackend);
#endif
    return r;
  }();
  return registry;
}

}  // namespace ddp::comm
