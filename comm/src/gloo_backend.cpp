#include "ddp/comm/gloo_backend.hpp"

#include "ddp/comm/detail/work_queue.hpp"
#include "ddp/comm/mpi_session.hpp"
#include "ddp/common/environment.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/net.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <mutex>

namespace ddp::comm {
namespace {

at::ScalarType scalarType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return at::kFloat;
    case DType::kFloat64:
      return at::kDouble;
    case DType::kInt32:
      return at::kInt;
    case DType::kInt64:
      return at::kLong;
    case DType::kFloat16:
      return at::kHalf;
    case DType::kBFloat16:
      return at::kBFloat16;
  }
  return at::kFloat;
}

at::Tensor view(const void* data, size_t count, DType dtype) {
  return at::from_blob(const_cast<void*>(data), {static_cast<int64_t>(count)},
                       at::TensorOptions().dtype(scalarType(dtype)));
}

// Gloo in LibTorch 1.13 has no bfloat16. Collectives that only move data carry its bits as
// half (same size, no arithmetic); reductions run in float and round once at the end.
at::Tensor transportView(const void* data, size_t count, DType dtype) {
  return view(data, count, dtype == DType::kBFloat16 ? DType::kFloat16 : dtype);
}

// c10 errors carry a backtrace after the first line; users need the first line.
std::string message(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10 != nullptr ? c10->what_without_backtrace() : e.what();
  return text.substr(0, text.find('\n'));
}

c10d::ReduceOp glooOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return c10d::ReduceOp::SUM;
    case ReduceOp::kProd:
      return c10d::ReduceOp::PRODUCT;
    case ReduceOp::kMin:
      return c10d::ReduceOp::MIN;
    case ReduceOp::kMax:
      return c10d::ReduceOp::MAX;
  }
  return c10d::ReduceOp::SUM;
}

// A c10d Work plus what must happen on the host once it is done (averaging, the local half of
// reduce-scatter), run exactly once by whoever first sees completion.
class GlooWork final : public Work {
 public:
  GlooWork(c10::intrusive_ptr<c10d::Work> work, std::function<void()> finish)
      : work_(std::move(work)), finish_(std::move(finish)), start_(std::chrono::steady_clock::now()) {}

  bool isCompleted() override {
    if (!work_->isCompleted()) return false;
    complete();
    return true;
  }

  void wait(std::chrono::milliseconds timeout) override {
    try {
      // c10d reads a zero timeout as "none".
      work_->wait(timeout < std::chrono::milliseconds::zero() ? ::kNoTimeout
                                                              : std::max(timeout, std::chrono::milliseconds(1)));
    } catch (const std::exception& e) {
      if (!work_->isCompleted()) {
        throw TimeoutError(fmt::format("gloo collective did not complete within {} ms", timeout.count()));
      }
      throw CommError(fmt::format("gloo collective failed: {}", message(e)));
    }
    complete();
  }

  std::chrono::nanoseconds duration() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return duration_;
  }

 private:
  void complete() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    if (finish_) finish_();
    duration_ = std::chrono::steady_clock::now() - start_;
    done_ = true;
  }

  c10::intrusive_ptr<c10d::Work> work_;
  std::function<void()> finish_;
  std::chrono::steady_clock::time_point start_;
  mutable std::mutex mutex_;
  bool done_ = false;
  std::chrono::nanoseconds duration_{0};
};

// Where rank 0 serves the store and which interface this rank talks on.
struct Rendezvous {
  std::string host;
  int port = 0;  // 0: rank 0 picks a free one and sends it over MPI
  net::NetInterface interface;
  bool viaMpi = false;
};

Rendezvous planRendezvous(const WorldInfo& world, const BackendOptions& options) {
  const auto interfaces = net::listInterfaces();
  const std::string& ifname = options.interface;

  Rendezvous plan;
  if (world.hasMpi() && !world.masterAddr) {
    plan.viaMpi = true;
    std::vector<net::HostRecord> records;
    for (const auto& text : mpiAllgatherStrings(net::encodeHostRecord(net::localHostRecord()))) {
      records.push_back(net::decodeHostRecord(text));
    }
    // Every rank takes part in both exchanges whatever its own settings, so none waits alone.
    const bool oneHost = net::chooseRendezvousAddress(records) == "127.0.0.1";
    if (!ifname.empty()) plan.interface = net::findInterface(interfaces, ifname);
    plan.host = mpiBroadcastString(world.rank != 0  ? ""
                                   : ifname.empty() ? net::chooseRendezvousAddress(records)
                                                    : plan.interface.address,
                                   0);
    if (ifname.empty()) plan.interface = net::interfaceReaching(interfaces, plan.host);
    if (plan.interface.loopback && !oneHost) {
      throw ConfigError(
          fmt::format("gloo: interface '{}' is loopback but the ranks run on several hosts: set {} or "
                      "--interface",
                      plan.interface.name, env::kGlooIfname));
    }
    return plan;
  }
  if (!world.masterAddr || !world.masterPort) {
    throw ConfigError(
        fmt::format("gloo backend needs rendezvous information: start under mpirun or ddprun, or set {} and {}",
                    env::kMasterAddr, env::kMasterPort));
  }
  plan.host = *world.masterAddr;
  plan.port = *world.masterPort;
  plan.interface =
      ifname.empty() ? net::interfaceReaching(interfaces, plan.host) : net::findInterface(interfaces, ifname);
  return plan;
}

class GlooBackend final : public Backend {
 public:
  GlooBackend(const WorldInfo& world, const BackendOptions& options) : rank_(world.rank), size_(world.size) {
    const auto plan = planRendezvous(world, options);
    c10d::TCPStoreOptions storeOptions;
    storeOptions.isServer = rank_ == 0;
    storeOptions.numWorkers = static_cast<size_t>(size_);
    storeOptions.waitWorkers = false;
    storeOptions.timeout = options.timeout;
    storeOptions.port = static_cast<uint16_t>(plan.port);
    try {
      if (plan.viaMpi) {
        // Rank 0 binds a free port first, then tells the others where it is ("" if it failed).
        c10::intrusive_ptr<c10d::TCPStore> server;
        std::string failure;
        if (rank_ == 0) {
          try {
            server = c10::make_intrusive<c10d::TCPStore>(plan.host, storeOptions);
          } catch (const std::exception& e) {
            failure = e.what();
          }
        }
        const auto port = mpiBroadcastString(server ? std::to_string(server->getPort()) : "", 0);
        if (port.empty()) {
          throw CommError(fmt::format("gloo: rank 0 could not serve the rendezvous store on {}: {}", plan.host,
                                      failure.substr(0, failure.find('\n'))));
        }
        storeOptions.port = static_cast<uint16_t>(std::stoi(port));
        store_ = server ? server : c10::make_intrusive<c10d::TCPStore>(plan.host, storeOptions);
      } else {
        store_ = c10::make_intrusive<c10d::TCPStore>(plan.host, storeOptions);
      }
      auto glooOptions = c10d::ProcessGroupGloo::Options::create(options.timeout);
      glooOptions->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(plan.interface.name));
      group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, rank_, size_, glooOptions);
    } catch (const ddp::Error&) {
      throw;
    } catch (const std::exception& e) {
      throw CommError(fmt::format("gloo rendezvous at {}:{} over {} failed: {}", plan.host, storeOptions.port,
                                  plan.interface.name, message(e)));
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view name() const override { return "gloo"; }
  Memory& memory() override { return hostMemory(); }

  std::shared_ptr<Work> allreduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    if (count == 0) return detail::completedWork();
    if (send != recv) std::memcpy(recv, send, count * dtypeSize(dtype));
    c10d::AllreduceOptions opts;
    opts.reduceOp = glooOp(op);
    if (dtype == DType::kBFloat16) {
      std::vector<at::Tensor> wide{view(recv, count, dtype).to(at::kFloat)};
      const int n = size_;
      auto finish = [wide, recv, count, dtype, op, n] {
        if (op == ReduceOp::kAvg) wide[0].div_(n);
        view(recv, count, dtype).copy_(wide[0]);
      };
      return start([&] { return group_->allreduce(wide, opts); }, finish);
    }
    std::vector<at::Tensor> tensors{view(recv, count, dtype)};
    return start([&] { return group_->allreduce(tensors, opts); }, averageAfter(recv, count, dtype, op));
  }

  std::shared_ptr<Work> broadcast(void* buffer, size_t count, DType dtype, int root) override {
    if (count == 0) return detail::completedWork();
    std::vector<at::Tensor> tensors{transportView(buffer, count, dtype)};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    return start([&] { return group_->broadcast(tensors, opts); }, nullptr);
  }

  std::shared_ptr<Work> allgather(const void* send, void* recv, size_t count, DType dtype) override {
    if (count == 0) return detail::completedWork();
    const size_t bytes = count * dtypeSize(dtype);
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < size_; ++r) {
      outputs[0].push_back(transportView(static_cast<char*>(recv) + r * bytes, count, dtype));
    }
    // An in-place input aliases an output; Gloo copies inputs first, so a separate copy keeps it safe.
    auto input = transportView(send, count, dtype).clone();
    std::vector<at::Tensor> inputs{input};
    return start([&] { return group_->allgather(outputs, inputs); }, [input] {});
  }

  // Gloo in LibTorch 1.13 has no reduce_scatter: an alltoall moves chunk r of every rank to
  // rank r (the (n-1)/n traffic a ring reduce-scatter moves), and the rank reduces them locally.
  std::shared_ptr<Work> reduceScatter(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) override {
    if (count == 0) return detail::completedWork();
    auto input = transportView(send, count * static_cast<size_t>(size_), dtype);
    auto gathered = at::empty({size_, static_cast<int64_t>(count)}, input.options());
    auto flat = gathered.view({-1});
    std::vector<int64_t> splits;
    auto finish = [this, gathered, recv, count, dtype, op] {
      const auto* base = static_cast<const char*>(gathered.data_ptr());
      const size_t bytes = count * dtypeSize(dtype);
      std::memmove(recv, base, bytes);
      for (int r = 1; r < size_; ++r) reduceInto(recv, base + r * bytes, dtype, count, op);
      if (op == ReduceOp::kAvg) divideInPlace(recv, dtype, count, size_);
    };
    return start([&] { return group_->alltoall_base(flat, input, splits, splits); }, finish);
  }

  std::shared_ptr<Work> alltoall(const void* send, void* recv, size_t count, DType dtype) override {
    if (send == recv && count != 0) throw Error("alltoall: send and recv must be different buffers");
    if (count == 0) return detail::completedWork();
    auto input = transportView(send, count * static_cast<size_t>(size_), dtype);
    auto output = transportView(recv, count * static_cast<size_t>(size_), dtype);
    std::vector<int64_t> splits;
    return start([&] { return group_->alltoall_base(output, input, splits, splits); }, nullptr);
  }

  std::shared_ptr<Work> barrier() override {
    return start([&] { return group_->barrier(); }, nullptr);
  }

 private:
  std::function<void()> averageAfter(void* data, size_t count, DType dtype, ReduceOp op) const {
    if (op != ReduceOp::kAvg) return nullptr;
    const int n = size_;
    return [=] { divideInPlace(data, dtype, count, n); };
  }

  template <typename Launch>
  std::shared_ptr<Work> start(Launch launch, std::function<void()> finish) {
    try {
      return std::make_shared<GlooWork>(launch(), std::move(finish));
    } catch (const std::exception& e) {
      throw CommError(fmt::format("gloo: {}", message(e)));
    }
  }

  int rank_;
  int size_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

}  // namespace

std::unique_ptr<Backend> makeGlooBackend(const WorldInfo& world, const BackendOptions& options) {
  return std::make_unique<GlooBackend>(world, options);
}

}  // namespace ddp::comm
