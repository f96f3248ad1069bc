#pragma once
// What differs between the LibTorch versions ddp::torch and train build against (Debian's 1.13
// and the pip wheels' 2.x): the one place that knows (docs/ddp.md, "LibTorch versions").

#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/version.h>

#include <utility>

namespace ddp::comm::detail {

// The owning pointer to an autograd node (a parameter's gradient accumulator): std::shared_ptr
// in 1.13, c10::intrusive_ptr in 2.13.
using NodePtr = decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));

// Autocast on or off for a device type, in dtype: set per device type since 2.4; 1.13 has a
// call per device (deprecated since).
inline void setAutocast(at::DeviceType device, bool on, at::ScalarType dtype) {
#if TORCH_VERSION_MAJOR * 100 + TORCH_VERSION_MINOR >= 204
  if (on) at::autocast::set_autocast_dtype(device, dtype);
  at::autocast::set_autocast_enabled(device, on);
#else
  if (device == at::kCUDA) {
    if (on) at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(on);
  } else {
    if (on) at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(on);
  }
#endif
}

}  // namespace ddp::comm::detail
