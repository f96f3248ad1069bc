// step_timer_overhead [STEPS]: the cost of the step timer per training step, as the train loop
// uses it (a step, five phases, three bucket collectives, a loss), writing a real JSONL file.
// Prints one JSON object with microseconds per step, writing and not.
#include "ddp/comm/step_timer.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

using namespace ddp;
using namespace ddp::comm;

static double microsPerStep(const std::string& path, int steps) {
  StepTimerOptions options;
  options.path = path;
  StepTimer timer(options);
  const auto begin = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    timer.beginStep(step, 32);
    for (Phase phase : kPhases) timer.beginPhase(phase);
    for (int bucket = 0; bucket < 3; ++bucket)
      timer.recordCollective(CollectiveOp::kAllreduce, bucket, 1 << 20, StepTimer::Clock::now(),
                             std::chrono::microseconds(300));
    timer.setLoss(2.5);
    timer.endStep();
  }
  timer.flush();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin).count() / steps;
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 100000;
  const auto path = std::filesystem::temp_directory_path() / "ddp-step-timer-overhead.jsonl";
  const double silent = microsPerStep("", steps);
  const double writing = microsPerStep(path.string(), steps);
  std::printf(
      "{\"steps\": %d, \"us_per_step_silent\": %.3f, \"us_per_step_writing\": %.3f, \"bytes_per_step\": %.1f}\n", steps,
      silent, writing, static_cast<double>(std::filesystem::file_size(path)) / steps);
  std::filesystem::remove(path);
}
