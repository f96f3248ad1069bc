#include "ddp/profiler/run.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/run_layout.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

namespace ddp::profiler {
namespace {

using nlohmann::json;
using TimingsByRank = std::map<int, std::vector<StepRecord>>;

std::optional<json> readJsonFile(const std::string& path, std::vector<std::string>& problems) {
  std::ifstream in(path);
  if (!in) {
    problems.push_back(fmt::format("{}: cannot be read", path));
    return std::nullopt;
  }
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    problems.push_back(fmt::format("{}: not JSON ({})", path, e.what()));
    return std::nullopt;
  }
}

// Calls parse on every non-blank line; a line it refuses is a problem "file:line: why", the
// first of a file's shown with the count of the others, and the file's other lines are kept.
template <typename Parse>
void forEachLine(const std::string& file, std::vector<std::string>& problems, Parse parse) {
  std::ifstream in(file);
  size_t lineNo = 0, bad = 0;
  std::string firstProblem;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      parse(line);
    } catch (const Error& e) {
      if (bad++ == 0) firstProblem = fmt::format("{}:{}: {}", file, lineNo, e.what());
    }
  }
  if (bad == 1) problems.push_back(firstProblem);
  if (bad > 1)
    problems.push_back(fmt::format("{} ({} unusable lines in this file; the first shown)", firstProblem, bad));
}

void loadTimings(const std::string& file, TimingsByRank& timings, std::vector<std::string>& problems) {
  std::vector<StepRecord> records;
  const size_t before = problems.size();
  forEachLine(file, problems, [&](const std::string& line) { records.push_back(parseStepRecord(line)); });
  if (records.empty()) {
    if (problems.size() == before) problems.push_back(fmt::format("{}: empty", file));
    return;
  }
  const int rank = records.front().rank;
  std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  auto& slot = timings[rank];
  if (!slot.empty()) problems.push_back(fmt::format("{}: rank {} also has another timings file; merged", file, rank));
  slot.insert(slot.end(), records.begin(), records.end());
  for (const auto& r : records) {
    if (r.rank != rank) {
      problems.push_back(fmt::format("{}: holds records of ranks {} and {}", file, rank, r.rank));
      break;
    }
  }
}

void loadExit(const std::string& file, RunData& run) {
  auto object = readJsonFile(file, run.problems);
  if (!object) return;
  try {
    run.exits.push_back(rankExitFromJson(*object));
  } catch (const Error& e) {
    run.problems.push_back(fmt::format("{}: {}", file, e.what()));
  }
}

void loadManifest(const std::string& file, RunData& run, std::vector<EarlierAttempt>& earlier) {
  auto object = readJsonFile(file, run.problems);
  if (!object) return;
  try {
    const auto manifest = runManifestFromJson(*object);
    run.worldSize = manifest.np;
    run.lostHost = manifest.lostHost;
    earlier = manifest.earlierAttempts;
    run.command = manifest.command;
    run.instance = manifest.instanceName().value_or("");
    run.environment = manifest.environment;
    for (const auto& [name, value] : manifest.rankEnvironment) run.environment[name] = value;
    for (const auto& h : manifest.hosts) run.hosts.insert(h.host);
  } catch (const Error& e) {
    run.problems.push_back(fmt::format("{}: {}", file, e.what()));
  }
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
  out.ranks = static_cast<int>(timings.size());
  if (!timings.empty()) {
    const auto& lowest = timings.begin()->second;
    for (const auto& r : lowest) out.stepSeconds += r.stepMs / 1e3;
    for (const auto& [rank, records] : timings)
      if (!records.empty()) out.samplesPerStep += records.front().samples;
  }
  return out;
}

}  // namespace

std::vector<BenchRow> loadBenchFile(const std::string& file, std::vector<std::string>& problems) {
  std::vector<BenchRow> rows;
  auto object = readJsonFile(file, problems);
  if (!object) return rows;
  if (!object->is_object() || !object->contains("rows") || !(*object)["rows"].is_array()) {
    problems.push_back(fmt::format("{}: not a ddpbench --json result (no \"rows\")", file));
    return rows;
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
    rows.push_back(b);
  }
  return rows;
}

namespace {

void loadBench(const std::string& file, RunData& run) {
  for (auto& row : loadBenchFile(file, run.problems)) run.bench.push_back(std::move(row));
}

void loadSource(const std::string& file, RunData& run) {
  auto object = readJsonFile(file, run.problems);
  if (!object) return;
  try {
    auto source = timingSourceFromJson(*object);
    run.sources[source.rank] = std::move(source);
  } catch (const std::exception& e) {
    run.problems.push_back(fmt::format("{}: {}", file, e.what()));
  }
}

void loadUtilisation(const std::string& file, RunData& run) {
  // The last line of a rank killed mid-write may be cut: said, and the file's other lines kept.
  forEachLine(file, run.problems, [&](const std::string& line) {
    const auto sample = parseUtilSample(line);
    run.utilisation[sample.rank].push_back(sample);
  });
}

// Hosts where ranks really ran beat the hosts the job was given.
void chooseHosts(RunData& run) {
  std::set<std::string> exitHosts;
  for (const auto& e : run.exits)
    if (!e.host.empty()) exitHosts.insert(e.host);
  if (!exitHosts.empty()) run.hosts = exitHosts;
  if (run.hosts.empty() && run.nccl) run.hosts = run.nccl->hosts;
}

void loadAttempts(const RunLayout& layout, const std::vector<EarlierAttempt>& recorded, RunData& run) {
  for (int attempt : layout.attempts()) {
    TimingsByRank earlier;
    for (const auto& file : layout.attempt(attempt).timingsFiles()) loadTimings(file, earlier, run.problems);
    run.attempts.push_back(summarise(attempt, earlier));
    for (const auto& a : recorded)
      if (a.attempt == attempt) run.attempts.back().lostHost = a.lostHost;
  }
  if (!run.attempts.empty()) run.attempts.push_back(summarise(run.attempts.back().attempt + 1, run.timings));
}

}  // namespace

RunData loadRun(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw ConfigError(fmt::format("{} is not a directory", dir));
  const RunLayout layout(dir);
  const auto timingFiles = layout.timingsFiles();
  const auto exitFiles = layout.exitFiles();
  const auto ncclFiles = layout.ncclLogs();
  if (timingFiles.empty() && exitFiles.empty() && ncclFiles.empty() && !layout.hasManifest())
    throw ConfigError(fmt::format("{} is not a run directory: it has no {}", dir, RunLayout::whatMarksARun()));
  RunData run;
  run.dir = dir;
  std::vector<EarlierAttempt> earlier;  // run.json's record of the attempts before the last
  if (layout.hasManifest()) loadManifest(layout.manifest(), run, earlier);
  for (const auto& file : timingFiles) loadTimings(file, run.timings, run.problems);
  for (const auto& file : exitFiles) loadExit(file, run);
  for (const auto& file : layout.utilisationFiles()) loadUtilisation(file, run);
  for (const auto& file : layout.timingsSourceFiles()) loadSource(file, run);
  for (auto& [rank, samples] : run.utilisation)
    std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.tUnixUs < b.tUnixUs; });
  if (!ncclFiles.empty()) run.nccl = readNcclLogs(ncclFiles);
  for (const auto& file : layout.benchResults()) loadBench(file, run);
  chooseHosts(run);
  loadAttempts(layout, earlier, run);
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

std::vector<BenchRow> allreduceBench(const RunData& run) {
  const auto backend = commandOption(run.command, "--backend");
  std::vector<BenchRow> all, own;
  for (const auto& row : run.bench) {
    if (row.op != "allreduce" || row.busbwGbps <= 0) continue;
    all.push_back(row);
    if (backend && row.backend == *backend) own.push_back(row);
  }
  return own.empty() ? all : own;
}

std::optional<BenchRow> nearestAllreduceBench(const RunData& run, uint64_t bytes) {
  std::optional<BenchRow> best;
  auto distance = [&](const BenchRow& b) {
    return std::abs(std::log(static_cast<double>(std::max<int64_t>(1, b.bytes)) /
                             static_cast<double>(std::max<uint64_t>(1, bytes))));
  };
  for (const auto& b : allreduceBench(run))
    if (!best || distance(b) < distance(*best)) best = b;
  return best;
}

std::optional<std::pair<int64_t, double>> largestAllreduceBusbw(const RunData& run) {
  std::optional<std::pair<int64_t, double>> best;
  for (const auto& row : allreduceBench(run)) {
    if (!best || row.bytes > best->first)
      best = std::make_pair(row.bytes, row.busbwGbps);
    else if (row.bytes == best->first)
      best->second = std::max(best->second, row.busbwGbps);
  }
  return best;
}

}  // namespace ddp::profiler
