// sampler_poll [POLLS]: the CPU time one utilisation sample costs ddprun's worker, as --profile
// takes it: a real process group (a child in a group of its own, as the worker runs a rank), the
// whole of /proc scanned for the busiest other processes, the rank's threads' schedstat, its
// cgroup, the host's counters, a line appended to a real file. Prints one JSON object: the CPU
// (user + system) and wall microseconds per sample, and the processes /proc held.
#include "../launcher/src/procfs.hpp"
#include "../launcher/src/sampler.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

double cpuMicros() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto micros = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec); };
  return micros(u.ru_utime) + micros(u.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  const int polls = argc > 1 ? std::atoi(argv[1]) : 2000;
  if (polls < 1) {
    std::fprintf(stderr, "sampler_poll: POLLS must be a positive count, not '%s'\n", argv[1]);
    return 2;
  }
  const pid_t child = ::fork();
  if (child == 0) {
    ::setpgid(0, 0);
    ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  ::setpgid(child, child);
  const auto path = std::filesystem::temp_directory_path() / ("sampler-poll-" + std::to_string(::getpid()) + ".jsonl");
  double cpu = 0, wall = 0;
  {
    ddp::launcher::UtilSampler sampler(path.string(), 0, std::nullopt, std::chrono::milliseconds(0));
    sampler.poll(child);  // the baseline reading
    const double cpu0 = cpuMicros();
    const auto wall0 = std::chrono::steady_clock::now();
    for (int i = 0; i < polls; ++i) sampler.poll(child);
    cpu = (cpuMicros() - cpu0) / polls;
    wall = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - wall0).count() / polls;
  }
  const size_t processes = ddp::launcher::procfs::scanProcesses().size();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  std::filesystem::remove(path);
  std::printf("{\"polls\": %d, \"cpu_us_per_sample\": %.1f, \"wall_us_per_sample\": %.1f, \"processes\": %zu}\n", polls,
              cpu, wall, processes);
  return 0;
}
