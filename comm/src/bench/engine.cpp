#include "ddp/comm/bench/engine.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace ddp::comm::bench {
namespace {

// A backend buffer (host or device), released on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer(Memory& memory, size_t bytes) : memory_(memory), ptr_(memory.allocate(bytes)) {}
  ~DeviceBuffer() { memory_.release(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  char* get() const { return static_cast<char*>(ptr_); }

 private:
  Memory& memory_;
  void* ptr_;
};

// One value reduced over ranks through the backend itself, so it works on device memory too.
template <typename T>
T reduceScalar(Backend& backend, DeviceBuffer& scratch, T value, DType dtype, ReduceOp op) {
  backend.memory().copyFromHost(scratch.get(), &value, sizeof value);
  backend.allreduce(scratch.get(), scratch.get(), 1, dtype, op)->wait();
  backend.memory().copyToHost(&value, scratch.get(), sizeof value);
  return value;
}

bool matches(double actual, double expected, DType dtype, ReduceOp op) {
  if (actual == expected) return true;
  if (op != ReduceOp::kAvg || !isFloating(dtype)) return false;
  // Averages of floats are rounded once more than the exact quotient.
  const double tolerance = dtype == DType::kFloat16    ? 1e-3
                           : dtype == DType::kBFloat16 ? 8e-3
                           : dtype == DType::kFloat32  ? 1e-6
                                                       : 1e-12;
  return std::fabs(actual - expected) <= tolerance * std::fabs(expected);
}

struct Buffers {
  char* send;
  char* recv;
};

class Sweep {
 public:
  Sweep(Backend& backend, const Collective& collective, const SweepOptions& options)
      : backend_(backend),
        c_(collective),
        o_(options),
        ts_(dtypeSize(options.dtype)),
        n_(backend.size()),
        rank_(backend.rank()) {
    const auto largest = c_.counts(o_.maxBytes, ts_, n_);
    sendBytes_ = largest.send * ts_;
    recvBytes_ = std::max(largest.send, largest.recv) * ts_;
    send_.emplace(backend.memory(), sendBytes_);
    recv_.emplace(backend.memory(), recvBytes_);
    scratch_.emplace(backend.memory(), sizeof(double));
    host_.resize(std::max(sendBytes_, recvBytes_));
  }

  Result measure(uint64_t bytes, bool inPlace) {
    const Counts counts = c_.counts(bytes, ts_, n_);
    Buffers buffers{send_->get(), recv_->get()};
    if (inPlace) {
      const auto [sendOffset, recvOffset] = c_.inPlaceOffsets(counts, rank_);
      buffers = {recv_->get() + sendOffset * ts_, recv_->get() + recvOffset * ts_};
    }
    Result result;
    result.op = std::string(c_.name);
    result.bytes = reportedBytes(counts, ts_);
    result.count = result.bytes / ts_;
    result.type = std::string(dtypeName(o_.dtype));
    result.redop = c_.hasReduceOp ? std::string(reduceOpName(o_.op)) : "none";
    result.root = c_.hasRoot ? o_.root : -1;
    result.inPlace = inPlace;
    // A checked run leaves the input written; timing needs nothing more exact than that.
    result.wrong = o_.check ? countWrong(counts, buffers) : -1;
    if (!o_.check) fillInput(counts, buffers);
    for (int i = 0; i < o_.warmup; ++i) launch(counts, buffers)->wait();
    backend_.barrier()->wait();
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::shared_ptr<Work>> works;
    works.reserve(static_cast<size_t>(o_.iters));
    for (int i = 0; i < o_.iters; ++i) works.push_back(launch(counts, buffers));
    for (auto& w : works) w->wait();
    const double localUs =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / o_.iters;
    result.timeUs = reduceScalar(backend_, *scratch_, localUs, DType::kFloat64, ReduceOp::kMax);
    result.algbwGBps = result.timeUs > 0 ? static_cast<double>(result.bytes) / result.timeUs / 1e3 : 0;
    result.busbwGBps = result.algbwGBps * c_.busFactor(n_);
    return result;
  }

 private:
  std::shared_ptr<Work> launch(const Counts& counts, const Buffers& b) {
    return c_.run(backend_, b.send, b.recv, counts.param, o_.dtype, o_.op, o_.root);
  }

  // Broadcast reads its input from the recv buffer on every rank; the others from send.
  char* inputOf(const Buffers& b) const { return c_.hasRoot ? b.recv : b.send; }

  void fillInput(const Counts& counts, const Buffers& b) {
    for (size_t i = 0; i < counts.send; ++i) {
      storeFromDouble(host_.data(), o_.dtype, i, inputValue(rank_, i, o_.op));
    }
    backend_.memory().copyFromHost(inputOf(b), host_.data(), counts.send * ts_);
  }

  int64_t countWrong(const Counts& counts, const Buffers& b) {
    const size_t outBytes = counts.recv * ts_;
    // Poison the output, then write the input (which may overlap it in place), so a
    // collective that writes nothing cannot pass.
    std::memset(host_.data(), 0xff, outBytes);
    backend_.memory().copyFromHost(b.recv, host_.data(), outBytes);
    fillInput(counts, b);
    launch(counts, b)->wait();
    backend_.memory().copyToHost(host_.data(), b.recv, outBytes);
    int64_t wrong = 0;
    std::vector<char> expect(ts_);
    for (size_t i = 0; i < counts.recv; ++i) {
      // The expected value goes through the dtype once, as the backend's result did.
      storeFromDouble(expect.data(), o_.dtype, 0, c_.expected(i, rank_, n_, counts, o_.op, o_.root, o_.dtype));
      const double expected = loadAsDouble(expect.data(), o_.dtype, 0);
      if (!matches(loadAsDouble(host_.data(), o_.dtype, i), expected, o_.dtype, o_.op)) ++wrong;
    }
    return reduceScalar<int64_t>(backend_, *scratch_, wrong, DType::kInt64, ReduceOp::kSum);
  }

  Backend& backend_;
  const Collective& c_;
  const SweepOptions& o_;
  size_t ts_;
  int n_;
  int rank_;
  size_t sendBytes_ = 0;
  size_t recvBytes_ = 0;
  std::optional<DeviceBuffer> send_;
  std::optional<DeviceBuffer> recv_;
  std::optional<DeviceBuffer> scratch_;
  std::vector<char> host_;
};

}  // namespace

std::vector<uint64_t> sweepSizes(const SweepOptions& options) {
  std::vector<uint64_t> sizes;
  for (double size = static_cast<double>(options.minBytes); size <= static_cast<double>(options.maxBytes);) {
    const auto bytes = static_cast<uint64_t>(size);
    sizes.push_back(bytes);
    size = std::max(size * options.factor, static_cast<double>(bytes + 1));
  }
  return sizes;
}

void validate(const SweepOptions& o, int nranks) {
  if (o.minBytes > o.maxBytes) {
    throw ConfigError(fmt::format("minimum size {} is larger than maximum size {}", o.minBytes, o.maxBytes));
  }
  if (!(o.factor > 1.0)) throw ConfigError(fmt::format("factor {} must be greater than 1", o.factor));
  if (o.iters < 1) throw ConfigError(fmt::format("iterations {} must be at least 1", o.iters));
  if (o.warmup < 0) throw ConfigError(fmt::format("warmup {} must not be negative", o.warmup));
  if (o.root < 0 || o.root >= nranks) {
    throw ConfigError(fmt::format("root {} is not a rank of a world of {}", o.root, nranks));
  }
}

void runSweep(Backend& backend, const Collective& collective, const SweepOptions& options,
              const std::function<void(const Result&, const std::optional<Result>&)>& onSize) {
  validate(options, backend.size());
  Sweep sweep(backend, collective, options);
  for (const uint64_t bytes : sweepSizes(options)) {
    const Result outOfPlace = sweep.measure(bytes, false);
    std::optional<Result> inPlace;
    if (collective.supportsInPlace) inPlace = sweep.measure(bytes, true);
    onSize(outOfPlace, inPlace);
  }
}

}  // namespace ddp::comm::bench
