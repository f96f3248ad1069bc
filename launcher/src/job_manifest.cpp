#include "job_manifest.hpp"

#include "ddp/common/clock.hpp"
#include "ddp/common/environment.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/files.hpp"
#include "ddp/common/log.hpp"
#include "ddp/config.hpp"
#include "ddp/launcher/process.hpp"
#include "ddp/launcher/rank.hpp"
#include "ddp/profiler/run.hpp"
#include "probe.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace ddp::launcher {

RunManifest startManifest(const LaunchPlan& plan, const JobSettings& s, const std::string& localHost) {
  RunManifest m;
  m.ddprunVersion = DDP_VERSION;
  m.command = plan.program;
  m.ddprunArgv = s.command;
  m.mpirunArgv = plan.argv;
  m.launcher = plan.launcher;
  m.np = plan.np;
  for (const auto& h : plan.hosts) m.hosts.push_back({h.host, h.slots});
  m.launchHost = localHost;
  m.masterAddr = plan.masterAddr;
  m.masterPort = plan.masterPort;
  m.runDir = plan.runDir;
  m.backend = profiler::commandOption(plan.program, "--backend");
  m.startUnixUs = unixMicros();
  m.attempt = s.attempt;
  m.maxRestarts = s.maxRestarts;
  m.earlierAttempts = s.earlierAttempts;
  m.instance = s.instance;
  m.rankEnvironment = withoutSecrets({plan.rankEnv.begin(), plan.rankEnv.end()});
  m.environment = withoutSecrets(Environment::fromProcess().all());
  return m;
}

namespace {

constexpr size_t kCachedKeys = 16;  // the cache keeps the versions of this many installations

// A file or directory as it is now: path, device, inode, size and modification time.
std::string stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path + " -";
  return fmt::format("{} {} {} {} {}.{:09}", path, st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec);
}

// What the probed versions depend on: the mpirun that runs, the loader's search for libnccl (its
// cache, LD_LIBRARY_PATH's directories and the files in them, the fallback paths) and the
// TorchConfigVersion.cmake files with the directories of their libraries. An upgrade changes
// one of them; none when mpirun cannot be found.
std::optional<std::string> versionsKey(const std::string& mpirun, const Environment& environment) {
  std::string key = DDP_VERSION "\n";
  try {
    std::error_code ec;
    const auto path = std::filesystem::canonical(resolveExecutable(mpirun, environment), ec);
    if (ec) return std::nullopt;
    key += stamp(path.string()) + "\n";
  } catch (const ConfigError&) {
    return std::nullopt;
  }
  const std::string ldPath = environment.get("LD_LIBRARY_PATH").value_or("");
  key += "LD_LIBRARY_PATH=" + ldPath + "\n" + stamp("/etc/ld.so.cache") + "\n";
  std::istringstream dirs(ldPath);
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty()) key += stamp(dir) + "\n" + stamp(dir + "/libnccl.so.2") + "\n";
  for (const auto& path : probe::ncclFallbacks()) key += stamp(path) + "\n";
  for (const auto& dir : probe::libtorchConfigDirs()) {
    const std::filesystem::path config(dir);
    key += stamp((config / "TorchConfigVersion.cmake").string()) + "\n" +
           stamp(config.parent_path().parent_path().string()) + "\n";
  }
  return key;
}

// $XDG_CACHE_HOME/ddprun/versions.json (~/.cache without it); none without either.
std::optional<std::string> cachePath(const Environment& environment) {
  if (auto xdg = environment.get("XDG_CACHE_HOME"); xdg && !xdg->empty()) return *xdg + "/ddprun/versions.json";
  if (auto home = environment.get("HOME"); home && !home->empty()) return *home + "/.cache/ddprun/versions.json";
  return std::nullopt;
}

// The cache's object; one without entries when there is no cache or it is not ddprun's.
nlohmann::json readCache(const std::optional<std::string>& path) {
  std::ifstream in(path.value_or(""));
  auto j = nlohmann::json::parse(in, nullptr, false);
  return j.is_object() && j.contains("entries") && j["entries"].is_array()
             ? j
             : nlohmann::json{{"entries", nlohmann::json::array()}};
}

// The entry for key; none when there is none or it is not what ddprun writes.
std::optional<Versions> cachedVersions(const nlohmann::json& entries, const std::string& key) {
  for (const auto& e : entries) {
    try {
      if (e.at("key").get<std::string>() == key) return versionsFrom(e.at("versions"));
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

}  // namespace

Versions probeVersions(const std::string& mpirun) {
  // The probes take the CPU only when the job leaves it idle: a whole `mpirun --version` and
  // libnccl's loading would otherwise compete with the job's start on a small host.
  const sched_param idle{};
  ::sched_setscheduler(0, SCHED_IDLE, &idle);  // this thread, and the process it forks
  const auto environment = Environment::fromProcess();
  const auto key = versionsKey(mpirun, environment);
  const auto path = cachePath(environment);
  auto cache = readCache(path);
  auto& entries = cache["entries"];
  if (key)
    if (auto v = cachedVersions(entries, *key)) return *v;
  Versions v;
  v.ddprun = DDP_VERSION;
  v.openmpi = probe::openMpiVersion(mpirun);
  if (auto torch = probe::libtorch()) {
    v.libtorch = torch->version;
    v.libtorchCuda = torch->cuda;
  }
  v.nccl = probe::ncclVersion();
  if (!key || !path) return v;
  const nlohmann::json entry = {{"key", *key}, {"versions", versionsJson(v)}};
  entries.insert(entries.begin(), entry);
  if (entries.size() > kCachedKeys) entries.erase(entries.begin() + kCachedKeys, entries.end());
  try {  // a cache that cannot be written is only slower
    makeDirectories(std::filesystem::path(*path).parent_path().string(), "cache directory");
    writeFileAtomically(*path, cache.dump(1) + "\n");
  } catch (const std::exception& e) {
    log::get("ddprun")->debug("versions not cached: {}", e.what());
  }
  return v;
}

}  // namespace ddp::launcher
