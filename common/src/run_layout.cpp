#include "ddp/common/run_layout.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace ddp {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kManifest = RunLayout::kManifestName;
constexpr std::string_view kRanks = RunLayout::kRanksName;
constexpr std::string_view kTimings = RunLayout::kTimingsName;
constexpr std::string_view kUtil = RunLayout::kUtilName;
constexpr std::string_view kNccl = RunLayout::kNcclName;
constexpr std::string_view kAttempts = RunLayout::kAttemptsName;
constexpr std::string_view kJsonl = ".jsonl";
constexpr std::string_view kProgress = ".progress";
constexpr std::string_view kSourceJson = ".source.json";
constexpr std::string_view kExitJson = ".exit.json";
constexpr std::string_view kNcclLog = ".log";
// The directories one attempt of a job fills.
constexpr std::string_view kPerAttempt[] = {kRanks, kTimings, kUtil, kNccl};

std::string rankFile(int rank, std::string_view suffix) { return fmt::format("rank-{:05d}{}", rank, suffix); }
std::string join(const std::string& root, std::string_view name) { return fmt::format("{}/{}", root, name); }

}  // namespace

RunLayout::RunLayout(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string RunLayout::whatMarksARun() {
  return fmt::format("{}, {}, {}/*{} or {}/*{}", kManifest, timingsPattern(), kRanks, kExitJson, kNccl, kNcclLog);
}
std::string RunLayout::timingsPattern() { return fmt::format("{}/*{}", kTimings, kJsonl); }

std::string RunLayout::manifest() const { return join(root_, kManifest); }
std::string RunLayout::ranksDir() const { return join(root_, kRanks); }
std::string RunLayout::rankLog(int rank) const { return join(ranksDir(), rankFile(rank, ".log")); }
std::string RunLayout::rankExit(int rank) const { return join(ranksDir(), rankFile(rank, kExitJson)); }
std::string RunLayout::rankStacks(int rank) const { return join(ranksDir(), rankFile(rank, ".stacks.txt")); }
std::string RunLayout::rankError(int rank) const { return join(ranksDir(), rankFile(rank, ".error.json")); }
std::string RunLayout::timingsDir() const { return join(root_, kTimings); }
std::string RunLayout::timings(int rank) const { return join(timingsDir(), rankFile(rank, kJsonl)); }
std::string RunLayout::progress(int rank) const { return join(timingsDir(), rankFile(rank, kProgress)); }
std::string RunLayout::timingsSource(int rank) const { return join(timingsDir(), rankFile(rank, kSourceJson)); }
std::string RunLayout::utilDir() const { return join(root_, kUtil); }
std::string RunLayout::utilisation(int rank) const { return join(utilDir(), rankFile(rank, kJsonl)); }
std::string RunLayout::ncclDir() const { return join(root_, kNccl); }
std::string RunLayout::ncclDebugFile() const { return join(ncclDir(), fmt::format("%h.%p{}", kNcclLog)); }

std::string RunLayout::report(ReportFile file) const {
  switch (file) {
    case ReportFile::kText:
      return root_ + "/report.txt";
    case ReportFile::kJson:
      return root_ + "/report.json";
    case ReportFile::kMarkdown:
      return root_ + "/report.md";
    case ReportFile::kHtml:
      return root_ + "/report.html";
    case ReportFile::kTrace:
      return root_ + "/trace.json";
  }
  return root_;
}

std::string RunLayout::attemptRelative(int k) { return fmt::format("{}/{}", kAttempts, k); }
RunLayout RunLayout::attempt(int k) const { return RunLayout(join(root_, attemptRelative(k))); }

std::vector<int> RunLayout::attempts() const {
  std::vector<int> out;
  std::error_code ec;
  const fs::path dir = fs::path(join(root_, kAttempts));
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto name = entry.path().filename().string();
    if (entry.is_directory(ec) && !name.empty() && name.size() < 6 &&
        name.find_first_not_of("0123456789") == std::string::npos)
      out.push_back(std::stoi(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool RunLayout::hasManifest() const {
  std::error_code ec;
  return fs::is_regular_file(manifest(), ec);
}

std::vector<std::string> RunLayout::timingsFiles() const { return listFiles(timingsDir(), "", kJsonl); }
std::vector<std::string> RunLayout::timingsSourceFiles() const { return listFiles(timingsDir(), "", kSourceJson); }
std::vector<std::string> RunLayout::exitFiles() const { return listFiles(ranksDir(), "", kExitJson); }
std::vector<std::string> RunLayout::utilisationFiles() const { return listFiles(utilDir(), "", kJsonl); }
std::vector<std::string> RunLayout::ncclLogs() const { return listFiles(ncclDir(), "", kNcclLog); }
std::vector<std::string> RunLayout::benchResults() const { return listFiles(root_, "ddpbench", ".json"); }

void RunLayout::makeRankDirectories(bool profiled) const {
  for (auto sub : kPerAttempt)
    if (profiled || (sub != kUtil && sub != kNccl)) makeDirectories(join(root_, sub), "run directory");
}

std::string RunLayout::keepAttempt(int k, bool profiled) const {
  const RunLayout kept = attempt(k);
  makeDirectories(kept.root(), "run directory");
  for (auto sub : kPerAttempt) {
    std::error_code ec;
    const fs::path from = join(root_, sub);
    if (fs::exists(from, ec)) fs::rename(from, join(kept.root(), sub), ec);
    if (ec) throw Error(fmt::format("keeping attempt {}: moving {}: {}", k, from.string(), ec.message()));
  }
  makeRankDirectories(profiled);
  return attemptRelative(k);
}

std::string progressPathFor(const std::string& timingsFile) {
  std::string path = timingsFile;
  if (path.size() > kJsonl.size() && path.compare(path.size() - kJsonl.size(), kJsonl.size(), kJsonl) == 0)
    path.erase(path.size() - kJsonl.size());
  return path + std::string(kProgress);
}

}  // namespace ddp
