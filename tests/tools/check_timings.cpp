// check_timings RUN_DIR RANKS STEPS: every rank has timings/rank-NNNNN.jsonl with one valid
// record per step, in order, every field present, phases summing to at most the step time and
// one allreduce per DDP bucket. Prints what is wrong (file:line) and exits 1.
#include "ddp/common/error.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/common/step_record.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <string>

using namespace ddp;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: check_timings RUN_DIR RANKS STEPS\n";
    return 2;
  }
  const std::string dir = argv[1];
  const int ranks = std::stoi(argv[2]);
  const int64_t steps = std::stoll(argv[3]);
  int errors = 0;
  auto fail = [&](const std::string& where, const std::string& what) {
    std::cerr << where << ": " << what << "\n";
    ++errors;
  };
  for (int rank = 0; rank < ranks; ++rank) {
    const auto path = RunLayout(dir).timings(rank);
    std::ifstream in(path);
    if (!in) {
      fail(path, "missing");
      continue;
    }
    int64_t line = 0;
    size_t buckets = 0;
    for (std::string text; std::getline(in, text);) {
      const auto where = fmt::format("{}:{}", path, ++line);
      try {
        auto r = parseStepRecord(text);
        double phases = 0;
        for (double ms : r.phasesMs) phases += ms;
        if (r.rank != rank) fail(where, fmt::format("rank {} in the file of rank {}", r.rank, rank));
        if (r.worldSize != ranks) fail(where, fmt::format("world_size {} (expected {})", r.worldSize, ranks));
        if (r.step != line - 1) fail(where, fmt::format("step {} (expected {})", r.step, line - 1));
        if (r.samples <= 0) fail(where, "no samples");
        if (!r.loss) fail(where, "no loss");
        if (phases > r.stepMs) fail(where, fmt::format("phases sum to {} ms > step {} ms", phases, r.stepMs));
        if (r.phasesMs[Phase::kForward] <= 0 || r.phasesMs[Phase::kBackward] <= 0 || r.phasesMs[Phase::kOptimizer] <= 0)
          fail(where, "a forward, backward or optimizer phase of zero");
        size_t allreduces = 0;
        for (const auto& c : r.collectives) {
          if (c.op != CollectiveOp::kAllreduce) continue;
          ++allreduces;
          if (c.bytes == 0 || c.startUnixUs < r.startUnixUs)
            fail(where, "a collective without bytes or before its step");
        }
        if (line == 1) buckets = allreduces;
        if (allreduces == 0 || allreduces != buckets)
          fail(where, fmt::format("{} allreduces (step 0 had {})", allreduces, buckets));
      } catch (const ddp::Error& e) {
        fail(where, e.what());
      }
    }
    if (line != steps) fail(path, fmt::format("{} records, expected {}", line, steps));
  }
  if (errors == 0) std::cout << fmt::format("check_timings: {} ranks x {} steps OK\n", ranks, steps);
  return errors == 0 ? 0 : 1;
}
