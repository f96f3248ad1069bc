// A static worker's hand-over to `ddprun worker` (worker.hpp; docs/launcher.md, "The binaries").
#include "ddp/common/environment.hpp"
#include "ddp/common/log.hpp"
#include "ddp/launcher/worker.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ddp::launcher {

std::string missingLibrary(const std::optional<std::string>& control, bool samplesGpu,
                           const WorkerLibraries& libraries) {
  if (control && !libraries.resolve) {
    const std::string host = control->substr(0, control->rfind(':'));
    in_addr numeric{};
    if (::inet_pton(AF_INET, host.c_str(), &numeric) != 1)
      return fmt::format("ddprun's host {} ({}) is a name to resolve", host, env::kControl);
  }
  if (samplesGpu && !libraries.openGpu) return "its GPU is to be sampled through NVML";
  return "";
}

void handOver(const std::vector<std::string>& program, const std::string& missing) {
  std::error_code ec;
  const std::string ddprun = (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "ddprun").string();
  std::vector<std::string> args{ddprun, "worker", "--"};
  args.insert(args.end(), program.begin(), program.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  log::get("ddprun")->debug("{}: handing the rank over to {} worker", missing, ddprun);
  ::execv(ddprun.c_str(), argv.data());
  log::get("ddprun")->warn("{}, which ddprun-worker cannot do, and {} cannot be started ({}): going on without",
                           missing, ddprun, std::strerror(errno));
}

}  // namespace ddp::launcher
