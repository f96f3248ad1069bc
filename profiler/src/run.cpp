#include "ddp/profiler/run.hpp"

#include "ddp/comm/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace ddp::profiler {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<fs::path> filesIn(const fs::path& dir, std::string_view suffix) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    if (entry.is_regular_file(ec) && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<json> readJsonFile(const fs::path& path, std::vector<std::string>& problems) {
  std::ifstream in(path);
  if (!in) {
    problems.push_back(fmt::format("{}: cannot be read", path.string()));
    return std::nullopt;
  }
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    problems.push_back(fmt::format("{}: not JSON ({})", path.string(), e.what()));
    return std::nullopt;
  }
}

using TimingsByRank = std::map<int, std::vector<comm::StepRecord>>;

void loadTimings(const fs::path& file, TimingsByRank& timings, std::vector<std::string>& problems) {
  std::ifstream in(file);
  std::vector<comm::StepRecord> records;
  size_t lineNo = 0, bad = 0;
  std::string firstProblem;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      records.push_back(comm::parseStepRecord(line));
    } catch (const Error& e) {
      if (bad++ == 0) firstProblem = fmt::format("{}:{}: {}", file.string(), lineNo, e.what());
    }
  }
  if (bad == 1) problems.push_back(firstProblem);
  if (bad > 1) problems.push_back(fmt::format("{} ({} unusable lines in this file; the first shown)", firstProblem, bad));
  if (records.empty()) {
    if (bad == 0) problems.push_back(fmt::format("{}: empty", file.string()));
    return;
  }
  const int rank = records.front().rank;
  std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  auto& slot = timings[rank];
  if (!slot.empty()) problems.push_back(fmt::format("{}: rank {} also has another timings file; merged", file.string(), rank));
  slot.insert(slot.end(), records.begin(), records.end());
  for (const auto& r : records) {
    if (r.rank != rank) {
      problems.push_back(fmt::format("{}: holds records of ranks {} and {}", file.string(), rank, r.rank));
      break;
    }
  }
}

void loadExit(const fs::path& file, RunData& run) {
  auto object = readJsonFile(file, run.problems);
  if (!object) return;
  if (!object->is_object() || !(*object)["rank"].is_number_integer()) {
    run.problems.push_back(fmt::format("{}: no integer \"rank\"", file.string()));
    return;
  }
  RankExit exit;
  exit.rank = (*object)["rank"].get<int>();
  if (auto it = object->find("exit_code"); it != object->end() && it->is_number_integer()) exit.exitCode = it->get<int>();
  if (auto it = object->find("signal"); it != object->end() && it->is_number_integer()) exit.signal = it->get<int>();
  if (auto it = object->find("host"); it != object->end() && it->is_string()) exit.host = it->get<std::string>();
  if (auto it = object->find("culprit"); it != object->end() && it->is_boolean()) exit.culprit = it->get<bool>();
  if (auto it = object->find("stop_requested"); it != object->end() && it->is_boolean()) exit.stopped = it->get<bool>();
  run.exits.push_back(exit);
}

AttemptSteps summarise(int attempt, const TimingsByRank& timings) {
  AttemptSteps out;
  out.attempt = attempt;
  for (const auto& [rank, records] : timings) {
    for (const auto& r : records) {
      out.firstStep = std::min(out.firstStep.value_or(r.step), r.step);
      out.lastStep = std::max(out.lastStep.value_or(r.step), r.step);
    }
  }
  if (!timings.empty()) {
    const auto& lowest = timings.begin()->second;
    for (const auto& r : lowest) out.stepSeconds += r.stepMs / 1e3;
    for (const auto& [rank, records] : timings)
      if (!records.empty()) out.samplesPerStep += records.front().samples;
  }
  return out;
}

void loadBench(const fs::path& file, RunData& run) {
  auto object = readJsonFile(file, run.problems);
  if (!object) return;
  if (!object->is_object() || !object->contains("rows") || !(*object)["rows"].is_array()) {
    run.problems.push_back(fmt::format("{}: not a ddpbench --json result (no \"rows\")", file.string()));
    return;
  }
  const std::string backend = object->value("backend", "");
  const int nranks = object->value("nranks", 0);
  for (const auto& row : (*object)["rows"]) {
    if (!row.is_object() || !row.contains("bytes") || !row.contains("busbw_gbps")) continue;
    BenchRow b;
    b.backend = backend;
    b.nranks = nranks;
    b.op = row.value("op", "");
    b.bytes = row.value("bytes", int64_t{0});
    b.timeUs = row.value("time_us", 0.0);
    b.algbwGbps = row.value("algbw_gbps", 0.0);
    b.busbwGbps = row.value("busbw_gbps", 0.0);
    run.bench.push_back(b);
  }
}

void loadUtilisation(const fs::path& file, RunData& run) {
  std::ifstream in(file);
  size_t lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j["rank"].is_number_integer() || !j["t_unix_us"].is_number_integer() || !j["cpu_pct"].is_number()) {
      // The last line of a rank killed mid-write may be cut: said, and the file's other lines kept.
      run.problems.push_back(fmt::format("{}:{}: not a utilisation sample (rank, t_unix_us, cpu_pct)", file.string(), lineNo));
      continue;
    }
    UtilSample u;
    u.tUnixUs = j["t_unix_us"].get<int64_t>();
    u.cpuPct = j["cpu_pct"].get<double>();
    u.rssMib = j.value("rss_mib", 0.0);
    if (j.contains("gpu_util_pct") && j["gpu_util_pct"].is_number()) u.gpuUtilPct = j["gpu_util_pct"].get<double>();
    if (j.contains("gpu_mem_util_pct") && j["gpu_mem_util_pct"].is_number()) u.gpuMemUtilPct = j["gpu_mem_util_pct"].get<double>();
    if (j.contains("gpu_mem_used_mib") && j["gpu_mem_used_mib"].is_number()) u.gpuMemUsedMib = j["gpu_mem_used_mib"].get<double>();
    run.utilisation[j["rank"].get<int>()].push_back(u);
  }
}

// attempts/0, attempts/1, ... in numeric order.
std::vector<std::pair<int, fs::path>> attemptDirs(const fs::path& root) {
  std::vector<std::pair<int, fs::path>> out;
  std::error_code ec;
  if (!fs::is_directory(root / "attempts", ec)) return out;
  for (const auto& entry : fs::directory_iterator(root / "attempts", ec)) {
    const auto name = entry.path().filename().string();
    if (entry.is_directory(ec) && !name.empty() && name.find_first_not_of("0123456789") == std::string::npos && name.size() < 6)
      out.emplace_back(std::stoi(name), entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

RunData loadRun(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw ConfigError(fmt::format("{} is not a directory", dir));
  RunData run;
  run.dir = dir;
  const fs::path root(dir);
  const auto timingFiles = filesIn(root / "timings", ".jsonl");
  const auto exitFiles = filesIn(root / "ranks", ".exit.json");
  const auto ncclFiles = filesIn(root / "nccl", ".log");
  const auto utilFiles = filesIn(root / "util", ".jsonl");
  const bool manifest = fs::is_regular_file(root / "run.json", ec);
  if (timingFiles.empty() && exitFiles.empty() && ncclFiles.empty() && !manifest)
    throw ConfigError(fmt::format("{} is not a run directory: it has no run.json, timings/*.jsonl, "
                                  "ranks/*.exit.json or nccl/*.log", dir));
  if (manifest) {
    if (auto object = readJsonFile(root / "run.json", run.problems); object && object->is_object()) {
      if (auto it = object->find("np"); it != object->end() && it->is_number_integer()) run.worldSize = it->get<int>();
      if (auto it = object->find("command"); it != object->end() && it->is_array())
        for (const auto& arg : *it)
          if (arg.is_string()) run.command.push_back(arg.get<std::string>());
      if (auto it = object->find("instance"); it != object->end() && it->is_object() && it->contains("name") &&
                                              (*it)["name"].is_string())
        run.instance = (*it)["name"].get<std::string>();
      if (auto it = object->find("hosts"); it != object->end() && it->is_array())
        for (const auto& h : *it)
          if (h.is_object() && h.contains("host") && h["host"].is_string()) run.hosts.insert(h["host"].get<std::string>());
    }
  }
  for (const auto& file : timingFiles) loadTimings(file, run.timings, run.problems);
  for (const auto& file : exitFiles) loadExit(file, run);
  for (const auto& file : utilFiles) loadUtilisation(file, run);
  for (auto& [rank, samples] : run.utilisation)
    std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.tUnixUs < b.tUnixUs; });
  if (!ncclFiles.empty()) {
    std::vector<std::string> paths;
    for (const auto& f : ncclFiles) paths.push_back(f.string());
    run.nccl = readNcclLogs(paths);
  }
  for (const auto& file : filesIn(root, ".json"))
    if (file.filename().string().rfind("ddpbench", 0) == 0) loadBench(file, run);
  // Hosts where ranks really ran beat the hosts the job was given.
  std::set<std::string> exitHosts;
  for (const auto& e : run.exits)
    if (!e.host.empty()) exitHosts.insert(e.host);
  if (!exitHosts.empty()) run.hosts = exitHosts;
  if (run.hosts.empty() && run.nccl) run.hosts = run.nccl->hosts;
  for (const auto& [attempt, path] : attemptDirs(root)) {
    TimingsByRank earlier;
    for (const auto& file : filesIn(path / "timings", ".jsonl")) loadTimings(file, earlier, run.problems);
    run.attempts.push_back(summarise(attempt, earlier));
  }
  if (!run.attempts.empty()) run.attempts.push_back(summarise(run.attempts.back().attempt + 1, run.timings));
  if (!run.worldSize) {
    for (const auto& [rank, records] : run.timings)
      for (const auto& r : records)
        if (r.worldSize > 0) run.worldSize = std::max(run.worldSize.value_or(0), r.worldSize);
  }
  return run;
}

std::optional<std::string> commandOption(const std::vector<std::string>& command, const std::string& name) {
  for (size_t i = 0; i < command.size(); ++i) {
    if (command[i] == name && i + 1 < command.size()) return command[i + 1];
    if (command[i].rfind(name + "=", 0) == 0) return command[i].substr(name.size() + 1);
  }
  return std::nullopt;
}

}  // namespace ddp::profiler
