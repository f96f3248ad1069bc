#pragma once
// StepTimer: measures the phases of each training step and appends one timings record per step
// (docs/timings.md) to a buffered file.

#include "ddp/common/environment.hpp"
#include "ddp/common/step_record.hpp"

#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

namespace ddp::comm {

struct StepTimerOptions {
  std::string path;  // the JSONL file; empty: measure without writing
  int rank = 0;
  int worldSize = 0;
  // Lines are written when this much is buffered, or when flushInterval has passed since the
  // last write, and at flush() and destruction. The default writes every step's line when the
  // step ends (one write), so a rank that crashes or is killed loses only the step under way.
  size_t bufferBytes = 64 * 1024;
  std::chrono::milliseconds flushInterval{0};
  // Where the timer says the timings are the C++ step timer's (TimingSource "cpp"); empty: nowhere.
  std::string sourcePath;
  // What the loop trains on ("cpu", "cuda:0"), for that record; empty: not said. The profiler
  // reads the training thread's CPU time (cpu_ms) as the rank's work only on CPU ranks.
  std::string device;

  // path = RunLayout($DDPRUN_RUN_DIR).timings(rank) when DDPRUN_RUN_DIR is set, else empty (and
  // sourcePath its timingsSource(rank)).
  // Beside it, progressPathFor(path) holds "STEP PHASE" of the phase under way ("STEP done"
  // after a step), rewritten in place at each phase (a copy into the file, mapped): ddprun's hang
  // watchdog reads it.
  static StepTimerOptions fromEnvironment(const Environment& environment, int rank, int worldSize);
};

// One per rank, used by one thread (the training loop), except recordCollective(), which may
// be called from any thread while a step is open. Steps do not nest; phases within a step do
// not overlap, and a phase entered twice in a step adds up.
class StepTimer {
 public:
  using Clock = std::chrono::steady_clock;

  // Creates the file's directory and truncates the file; throws ConfigError when it cannot.
  explicit StepTimer(StepTimerOptions options);
  ~StepTimer();  // flushes; never throws
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  bool writing() const { return file_ != nullptr; }
  const std::string& path() const { return options_.path; }

  void beginStep(int64_t step, int64_t samples);
  void beginPhase(Phase phase);
  void endPhase();
  void recordCollective(CollectiveOp op, int bucket, uint64_t bytes, Clock::time_point start,
                        std::chrono::nanoseconds duration);
  void setLoss(double loss) { current_.loss = loss; }
  // Closes the step (and an open phase) and returns its record.
  const StepRecord& endStep();
  // Writes what is buffered; throws ddp::Error when the write fails.
  void flush();

  // Times one phase of the current step for the lifetime of the object.
  class PhaseScope {
   public:
    PhaseScope(StepTimer& timer, Phase phase) : timer_(timer) { timer_.beginPhase(phase); }
    ~PhaseScope() { timer_.endPhase(); }
    PhaseScope(const PhaseScope&) = delete;
    PhaseScope& operator=(const PhaseScope&) = delete;

   private:
    StepTimer& timer_;
  };
  PhaseScope phase(Phase phase) { return PhaseScope(*this, phase); }

 private:
  StepTimerOptions options_;
  void markProgress(std::optional<Phase> phase);
  void closePhase(Clock::time_point now, std::chrono::nanoseconds cpu);
  std::FILE* file_ = nullptr;
  static constexpr size_t kProgressBytes = 48;
  void openProgress();
  char* progress_ = nullptr;  // the progress file, mapped
  std::string buffer_;
  Clock::time_point lastWrite_;
  StepRecord current_;
  Clock::time_point stepStart_;
  bool inStep_ = false;
  std::optional<Phase> openPhase_;
  Clock::time_point phaseStart_;
  std::chrono::nanoseconds phaseCpuStart_{0};  // the calling thread's CPU time when the phase began
  std::mutex collectivesMutex_;                // guards current_.collectives
};

}  // namespace ddp::comm
