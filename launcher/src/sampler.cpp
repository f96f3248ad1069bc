#include "sampler.hpp"

#include "ddp/common/clock.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/util_sample.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

namespace ddp::launcher {

GroupUsage groupUsage(int pgid) {
  GroupUsage usage;
  DIR* proc = ::opendir("/proc");
  if (!proc) return usage;
  while (dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(fmt::format("/proc/{}/stat", e->d_name));
    std::string line;
    if (!std::getline(in, line)) continue;
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    // cutime cstime priority nice threads itrealvalue starttime vsize rss; comm may hold spaces.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0, pgrp = 0, rss = 0;
    unsigned long long utime = 0, stime = 0, skip = 0;
    long long cutime = 0, cstime = 0;
    if (std::sscanf(line.c_str() + close + 1,
                    " %c %ld %ld %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld %*d %*d %*d %*d %llu %*u %ld",
                    &state, &ppid, &pgrp, &utime, &stime, &cutime, &cstime, &skip, &rss) != 9)
      continue;
    if (pgrp != pgid) continue;
    usage.ticks += utime + stime + static_cast<unsigned long long>(std::max(0LL, cutime + cstime));
    usage.rssPages += static_cast<unsigned long long>(std::max(0L, rss));
    ++usage.processes;
  }
  ::closedir(proc);
  return usage;
}

UtilSampler::UtilSampler(const std::string& path, int rank, std::optional<unsigned> gpu,
                         std::chrono::milliseconds interval)
    : rank_(rank), gpuIndex_(gpu), interval_(interval) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) throw ConfigError(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  if (gpu) {
    gpu_ = std::make_unique<probe::GpuSampler>(*gpu);
    if (!gpu_->available()) gpu_.reset();
  }
}

UtilSampler::~UtilSampler() {
  if (file_) std::fclose(file_);
}

void UtilSampler::poll(int pgid) {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_) return;
  next_ = now + interval_;
  const auto usage = groupUsage(pgid);
  if (usage.processes == 0) return;
  if (!primed_) {  // the first reading only sets the baseline
    primed_ = true;
    lastTicks_ = usage.ticks;
    last_ = now;
    return;
  }
  static const double ticksPerSecond = static_cast<double>(::sysconf(_SC_CLK_TCK));
  static const double pageMiB = static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1 << 20);
  const double seconds = std::chrono::duration<double>(now - last_).count();
  const double cpu = seconds > 0 ? 100.0 * static_cast<double>(usage.ticks - std::min(usage.ticks, lastTicks_)) /
                                       ticksPerSecond / seconds
                                 : 0;
  lastTicks_ = usage.ticks;
  last_ = now;
  UtilSample sample;
  sample.rank = rank_;
  sample.tUnixUs = unixMicros();
  sample.cpuPct = std::round(cpu * 10) / 10;
  sample.rssMib = std::round(static_cast<double>(usage.rssPages) * pageMiB * 10) / 10;
  sample.processes = usage.processes;
  if (gpu_) {
    if (auto s = gpu_->sample()) {
      sample.gpu = *gpuIndex_;
      sample.gpuUtilPct = s->gpuUtilPct;
      sample.gpuMemUtilPct = s->memUtilPct;
      sample.gpuMemUsedMib = static_cast<double>(s->memUsedMiB);
    }
  }
  const auto text = formatUtilSample(sample) + "\n";
  std::fwrite(text.data(), 1, text.size(), file_);
  std::fflush(file_);
}

}  // namespace ddp::launcher
