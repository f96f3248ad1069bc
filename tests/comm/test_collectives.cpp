// Multi-rank tests of a backend, run under mpirun (tests/CMakeLists.txt): every collective,
// dtype and reduce op on odd and zero sizes, against closed-form results. Every rank runs the
// same cases in the same order; checks are CHECKs so no rank leaves a collective early.

#define CATCH_CONFIG_RUNNER
#include "ddp/comm/backend.hpp"
#include "ddp/comm/detail/shm_allreduce.hpp"
#include "ddp/comm/registry.hpp"
#include "ddp/common/clock.hpp"
#include "ddp/common/environment.hpp"
#include "ddp/common/error.hpp"
#include "support/backend_session.hpp"

#include <catch2/catch.hpp>

#include <time.h>

#include <cmath>
#include <thread>

using namespace ddp::comm;

namespace {

std::unique_ptr<Backend> gBackend;

constexpr size_t kCounts[] = {0, 1, 7, 1000003};

std::string describe(DType d, ReduceOp op, size_t count, bool inPlace) {
  return std::string(dtypeName(d)) + " " + std::string(reduceOpName(op)) + " count " + std::to_string(count) +
         (inPlace ? " in-place" : " out-of-place");
}

// Rank r contributes r + (i % 3) to element i (prod: 1 + (r + i) % 2, to stay exact).
double input(int r, size_t i, ReduceOp op) {
  return op == ReduceOp::kProd ? 1 + (static_cast<size_t>(r) + i) % 2 : r + static_cast<double>(i % 3);
}

// Closed forms over N ranks: sum = N(N-1)/2 + N(i%3), min = i%3, max = N-1 + i%3,
// prod = 2^(number of ranks r with r+i odd), avg = sum/N (integers truncate).
double closedForm(int n, size_t i, ReduceOp op, DType d) {
  const double k = static_cast<double>(i % 3);
  const double sum = n * (n - 1) / 2.0 + n * k;
  switch (op) {
    case ReduceOp::kSum:
      return sum;
    case ReduceOp::kMin:
      return k;
    case ReduceOp::kMax:
      return n - 1 + k;
    case ReduceOp::kProd:
      return std::pow(2.0, i % 2 == 0 ? n / 2 : (n + 1) / 2);
    case ReduceOp::kAvg:
      return isFloating(d) ? sum / n : std::trunc(sum / n);
  }
  return 0;
}

std::vector<char> filled(size_t count, DType d, const std::function<double(size_t)>& value) {
  std::vector<char> data(std::max<size_t>(count, 1) * dtypeSize(d));
  for (size_t i = 0; i < count; ++i) storeFromDouble(data.data(), d, i, value(i));
  return data;
}

size_t mismatches(const std::vector<char>& data, size_t offset, size_t count, DType d,
                  const std::function<double(size_t)>& expected) {
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    if (loadAsDouble(data.data(), d, offset + i) != expected(i)) ++bad;
  }
  return bad;
}

// Every dtype × reduce op × size × placement, in the same order on every rank.
template <typename F>
void forEachReduction(F body) {
  for (DType d : kAllDTypes) {
    for (ReduceOp op : kAllReduceOps) {
      for (size_t count : kCounts) {
        for (bool inPlace : {false, true}) {
          INFO(describe(d, op, count, inPlace));
          body(d, op, count, inPlace);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("allreduce: every dtype, op and size, in and out of place", "[comm][collectives][mpi]") {
  Backend& b = *gBackend;
  const int n = b.size();
  const int r = b.rank();
  forEachReduction([&](DType d, ReduceOp op, size_t count, bool inPlace) {
    auto send = filled(count, d, [&](size_t i) { return input(r, i, op); });
    auto out = inPlace ? send : std::vector<char>(send.size());
    b.allreduce(inPlace ? out.data() : send.data(), out.data(), count, d, op)->wait();
    CHECK(mismatches(out, 0, count, d, [&](size_t i) { return closedForm(n, i, op, d); }) == 0);
  });
}

TEST_CASE("reduce-scatter: every dtype, op and size, in and out of place", "[comm][collectives][mpi]") {
  Backend& b = *gBackend;
  const int n = b.size();
  const int r = b.rank();
  forEachReduction([&](DType d, ReduceOp op, size_t count, bool inPlace) {
    const size_t total = count * static_cast<size_t>(n);
    auto send = filled(total, d, [&](size_t i) { return input(r, i, op); });
    std::vector<char> out(std::max<size_t>(count, 1) * dtypeSize(d));
    char* recv = inPlace ? send.data() + r * count * dtypeSize(d) : out.data();
    b.reduceScatter(send.data(), recv, count, d, op)->wait();
    const auto& result = inPlace ? send : out;
    const size_t offset = inPlace ? static_cast<size_t>(r) * count : 0;
    CHECK(mismatches(result, offset, count, d,
                     [&](size_t i) { return closedForm(n, static_cast<size_t>(r) * count + i, op, d); }) == 0);
  });
}

TEST_CASE("allgather: every dtype and size, in and out of place", "[comm][collectives][mpi]") {
  Backend& b = *gBackend;
  const int n = b.size();
  const int r = b.rank();
  for (DType d : kAllDTypes) {
    for (size_t count : kCounts) {
      for (bool inPlace : {false, true}) {
        INFO(describe(d, ReduceOp::kSum, count, inPlace));
        const size_t total = count * static_cast<size_t>(n);
        const auto mine = [&](int rank, size_t i) { return rank + 4.0 * static_cast<double>(i % 5); };
        auto send = filled(count, d, [&](size_t i) { return mine(r, i); });
        std::vector<char> out(std::max<size_t>(total, 1) * dtypeSize(d));
        const void* in = send.data();
        if (inPlace && count != 0) {
          std::memcpy(out.data() + r * count * dtypeSize(d), send.data(), count * dtypeSize(d));
          in = out.data() + r * count * dtypeSize(d);
        }
        b.allgather(in, out.data(), count, d)->wait();
        CHECK(mismatches(out, 0, total, d, [&](size_t i) { return mine(static_cast<int>(i / count), i % count); }) ==
              0);
      }
    }
  }
}

TEST_CASE("broadcast from rank 0 and from the last rank", "[comm][collectives][mpi]") {
  Backend& b = *gBackend;
  const int r = b.rank();
  for (DType d : kAllDTypes) {
    for (size_t count : kCounts) {
      for (int root : {0, b.size() - 1}) {
        INFO(describe(d, ReduceOp::kSum, count, true) << " root " << root);
        const auto value = [](int rank, size_t i) { return rank * 7.0 + static_cast<double>(i % 5); };
        auto buffer = filled(count, d, [&](size_t i) { return value(r, i); });
        b.broadcast(buffer.data(), count, d, root)->wait();
        CHECK(mismatches(buffer, 0, count, d, [&](size_t i) { return value(root, i); }) == 0);
      }
    }
  }
}

TEST_CASE("alltoall: every dtype and size", "[comm][collectives][mpi]") {
  Backend& b = *gBackend;
  const int n = b.size();
  const int r = b.rank();
  // Rank `from` sends chunk `to`, element i = from*8 + to*2 + i%2.
  const auto value = [](int from, int to, size_t i) { return from * 8.0 + to * 2.0 + i % 2; };
  for (DType d : kAllDTypes) {
    for (size_t count : kCounts) {
      INFO(describe(d, ReduceOp::kSum, count, false));
      const size_t total = count * static_cast<size_t>(n);
      auto send = filled(total, d, [&](size_t i) { return value(r, static_cast<int>(i / count), i % count); });
      std::vector<char> out(std::max<size_t>(total, 1) * dtypeSize(d));
      b.alltoall(send.data(), out.data(), count, d)->wait();
      CHECK(mismatches(out, 0, total, d, [&](size_t i) { return value(static_cast<int>(i / count), r, i % count); }) ==
            0);
    }
  }
}

TEST_CASE("Work: asynchronous completion, timeout, duration", "[comm][collectives][mpi]") {
  Backend& b = *gBackend;
  std::vector<float> data(1 << 16, 1.0f);
  // The last rank joins late: the others' wait with a short timeout must time out, then the
  // collective still completes.
  if (b.rank() == b.size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(600));
  auto work = b.allreduce(data.data(), data.data(), data.size(), DType::kFloat32, ReduceOp::kSum);
  if (b.rank() != b.size() - 1) {
    CHECK_THROWS_AS(work->wait(std::chrono::milliseconds(50)), ddp::TimeoutError);
    CHECK_FALSE(work->isCompleted());
  }
  work->wait();
  CHECK(work->isCompleted());
  CHECK(work->duration().count() > 0);
  CHECK(data[12345] == static_cast<float>(b.size()));
  b.barrier()->wait();
}

TEST_CASE("several collectives in flight complete in order", "[comm][collectives][mpi]") {
  Backend& b = *gBackend;
  std::vector<std::vector<int64_t>> buffers(8, std::vector<int64_t>(1001));
  std::vector<std::shared_ptr<Work>> works;
  for (size_t k = 0; k < buffers.size(); ++k) {
    std::fill(buffers[k].begin(), buffers[k].end(), static_cast<int64_t>(k + b.rank()));
    works.push_back(
        b.allreduce(buffers[k].data(), buffers[k].data(), buffers[k].size(), DType::kInt64, ReduceOp::kMax));
  }
  for (size_t k = 0; k < works.size(); ++k) {
    works[k]->wait();
    CHECK(buffers[k][1000] == static_cast<int64_t>(k) + b.size() - 1);
  }
}

TEST_CASE("the shared-memory allreduce sleeps while a rank of its host is late, it does not spin",
          "[comm][collectives][mpi]") {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return;  // a backend that runs without MPI
  detail::ShmAllreduce shm(MPI_COMM_WORLD, 0);
  std::vector<float> data(size_t{1} << 18, 1.0f);  // 1 MiB: two segments
  if (!shm.serves(data.size() * sizeof(float))) return;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Called directly, without the backend's polite wait for every rank in front: the others
  // copy their shares, then wait at the host barrier for the last rank, 400 ms late.
  if (rank == size - 1) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const auto before = ddp::threadCpuTime();
  const auto wallBefore = std::chrono::steady_clock::now();
  shm.run(data.data(), data.data(), data.size(), DType::kFloat32, ReduceOp::kSum, MPI_FLOAT, MPI_SUM);
  const auto used = std::chrono::duration_cast<std::chrono::milliseconds>(ddp::threadCpuTime() - before);
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - wallBefore);
  CHECK(data[123457] == static_cast<float>(size));
  if (rank != size - 1) {
    INFO("waited " << waited.count() << " ms, of which on a CPU " << used.count() << " ms");
    CHECK(waited.count() >= 300);
    CHECK(used.count() < 100);
  }
}

TEST_CASE("the mpi backend's queued allreduce sleeps while a rank is late, on one host or several",
          "[comm][collectives][mpi]") {
  Backend& b = *gBackend;
  if (b.name() != "mpi") return;
  // A world on one host: 128 KB, above what runs on the caller's thread and below the
  // shared-memory path, so MPI_Allreduce itself (which busy-polls) runs once every rank has met
  // at the window's barrier. Across (simulated) hosts the polite wait is MPI_Ibarrier, from 1 MiB.
  const detail::ShmAllreduce hosts(
      MPI_COMM_WORLD, ddp::comm::BackendOptions::fromEnvironment(ddp::Environment::fromProcess()).shmRanksPerHost);
  std::vector<float> data(hosts.wholeWorldHere() ? size_t{1} << 15 : size_t{1} << 18, 1.0f);
  if (b.rank() == b.size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  auto cpu = [] {  // every thread of the process: the queue's thread does the waiting
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
  };
  const auto before = cpu();
  const auto wallBefore = std::chrono::steady_clock::now();
  b.allreduce(data.data(), data.data(), data.size(), DType::kFloat32, ReduceOp::kSum)->wait();
  const auto used = std::chrono::duration_cast<std::chrono::milliseconds>(cpu() - before);
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - wallBefore);
  CHECK(data[12345] == static_cast<float>(b.size()));
  if (b.rank() != b.size() - 1) {
    INFO("waited " << waited.count() << " ms, of which on a CPU " << used.count() << " ms");
    CHECK(waited.count() >= 300);
    CHECK(used.count() < 100);
  }
  b.barrier()->wait();
}

int main(int argc, char** argv) { return ddp::tests::runWithBackend(argc, argv, gBackend, "test_collectives"); }
