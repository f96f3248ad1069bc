#include "ddp/comm/step_timer.hpp"

#include "ddp/common/clock.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/files.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/common/timing_source.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace ddp::comm {
namespace {

double toMs(std::chrono::nanoseconds d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

StepTimerOptions StepTimerOptions::fromEnvironment(const Environment& environment, int rank, int worldSize) {
  StepTimerOptions options;
  options.rank = rank;
  options.worldSize = worldSize;
  if (auto dir = environment.get(env::kRunDir); dir && !dir->empty()) {
    options.path = RunLayout(*dir).timings(rank);
    options.sourcePath = RunLayout(*dir).timingsSource(rank);
  }
  return options;
}

StepTimer::StepTimer(StepTimerOptions options) : options_(std::move(options)) {
  current_.rank = options_.rank;
  current_.worldSize = options_.worldSize;
  lastWrite_ = Clock::now();
  if (options_.path.empty()) return;
  std::filesystem::path path(options_.path);
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec)
    throw ConfigError(
        fmt::format("cannot create the timings directory {}: {}", path.parent_path().string(), ec.message()));
  file_ = std::fopen(options_.path.c_str(), "w");
  if (!file_)
    throw ConfigError(fmt::format("cannot write the timings file {}: {}", options_.path, std::strerror(errno)));
  buffer_.reserve(options_.bufferBytes + 4096);
  openProgress();
  if (!options_.sourcePath.empty()) {
    TimingSource source;
    source.rank = options_.rank;
    source.source = "cpp";
    source.runtime = "ddp::comm::StepTimer";
    source.device = options_.device;
    writeFileAtomically(options_.sourcePath, toJson(source).dump() + "\n");
  }
}

// The progress file is kProgressBytes mapped into memory, as the Python instrumentation maps it: a
// phase change is a copy, not a system call (ddprun's worker reads the same page through the file).
// Best effort: without it the heartbeat falls back to the timings file.
void StepTimer::openProgress() {
  const int fd = ::open(progressPathFor(options_.path).c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (::ftruncate(fd, kProgressBytes) == 0) {
    void* map = ::mmap(nullptr, kProgressBytes, PROT_WRITE, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) progress_ = static_cast<char*>(map);
  }
  ::close(fd);
}

// formatStepProgress, padded to the file's width so each rewrite replaces the last whole.
void StepTimer::markProgress(std::optional<Phase> phase) {
  if (!progress_) return;
  std::string line = formatStepProgress({current_.step, phase});
  line.resize(kProgressBytes - 1, ' ');
  line += '\n';
  std::memcpy(progress_, line.data(), kProgressBytes);
}

StepTimer::~StepTimer() {
  if (progress_) ::munmap(progress_, kProgressBytes);
  if (!file_) return;
  try {
    flush();
  } catch (...) {
    // A destructor cannot report; the last flush() the program made did.
  }
  std::fclose(file_);
}

void StepTimer::beginStep(int64_t step, int64_t samples) {
  if (inStep_) endStep();
  {
    std::lock_guard<std::mutex> lock(collectivesMutex_);
    current_.collectives.clear();
  }
  current_.step = step;
  current_.samples = samples;
  current_.phasesMs.fill(0);
  current_.cpuMs.emplace().fill(0);
  current_.loss.reset();
  stepStart_ = Clock::now();
  current_.startUnixUs = unixMicros();
  inStep_ = true;
}

// One reading of each clock ends the open phase and begins the next: the thread's CPU time is a
// system call (about 1.3 us here), the largest part of what timing a phase costs.
void StepTimer::beginPhase(Phase phase) {
  const auto now = Clock::now();
  const auto cpu = threadCpuTime();
  closePhase(now, cpu);
  openPhase_ = phase;
  phaseStart_ = now;
  phaseCpuStart_ = cpu;
  markProgress(phase);
}

void StepTimer::endPhase() {
  if (openPhase_) closePhase(Clock::now(), threadCpuTime());
}

void StepTimer::closePhase(Clock::time_point now, std::chrono::nanoseconds cpu) {
  if (!openPhase_) return;
  current_.phasesMs[*openPhase_] += toMs(now - phaseStart_);
  if (current_.cpuMs) (*current_.cpuMs)[*openPhase_] += toMs(cpu - phaseCpuStart_);  // none before a step
  openPhase_.reset();
}

void StepTimer::recordCollective(CollectiveOp op, int bucket, uint64_t bytes, Clock::time_point start,
                                 std::chrono::nanoseconds duration) {
  CollectiveRecord record;
  record.op = op;
  record.bucket = bucket;
  record.bytes = bytes;
  // Steady-clock instants map onto the wall clock through the step's start.
  record.startUnixUs =
      current_.startUnixUs + std::chrono::duration_cast<std::chrono::microseconds>(start - stepStart_).count();
  record.durationMs = toMs(duration);
  std::lock_guard<std::mutex> lock(collectivesMutex_);
  current_.collectives.push_back(record);
}

const StepRecord& StepTimer::endStep() {
  endPhase();
  current_.stepMs = toMs(Clock::now() - stepStart_);
  inStep_ = false;
  markProgress(std::nullopt);
  if (file_) {
    {
      std::lock_guard<std::mutex> lock(collectivesMutex_);
      buffer_ += formatStepRecord(current_);
    }
    buffer_ += '\n';
    if (buffer_.size() >= options_.bufferBytes || Clock::now() - lastWrite_ >= options_.flushInterval) flush();
  }
  return current_;
}

void StepTimer::flush() {
  lastWrite_ = Clock::now();
  if (!file_ || buffer_.empty()) return;
  size_t written = std::fwrite(buffer_.data(), 1, buffer_.size(), file_);
  bool ok = written == buffer_.size() && std::fflush(file_) == 0;
  buffer_.clear();
  if (!ok) throw Error(fmt::format("cannot write the timings file {}: {}", options_.path, std::strerror(errno)));
}

}  // namespace ddp::comm
