#include "ddp/common/run_layout.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace ddp {
namespace {

namespace fs = std::filesystem;

constexpr const char* kManifest = "run.json";
constexpr const char* kRanks = "ranks";
constexpr const char* kTimings = "timings";
constexpr const char* kUtil = "util";
constexpr const char* kNccl = "nccl";
constexpr const char* kAttempts = "attempts";
constexpr const char* kJsonl = ".jsonl";
constexpr const char* kProgress = ".progress";
constexpr const char* kExitJson = ".exit.json";
// The directories one attempt of a job fills.
constexpr const char* kPerAttempt[] = {kRanks, kTimings, kUtil, kNccl};

std::string rankFile(int rank, const char* suffix) { return fmt::format("rank-{:05d}{}", rank, suffix); }

}  // namespace

RunLayout::RunLayout(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string RunLayout::manifest() const { return root_ + "/" + kManifest; }
std::string RunLayout::ranksDir() const { return root_ + "/" + kRanks; }
std::string RunLayout::rankLog(int rank) const { return ranksDir() + "/" + rankFile(rank, ".log"); }
std::string RunLayout::rankExit(int rank) const { return ranksDir() + "/" + rankFile(rank, kExitJson); }
std::string RunLayout::rankStacks(int rank) const { return ranksDir() + "/" + rankFile(rank, ".stacks.txt"); }
std::string RunLayout::timingsDir() const { return root_ + "/" + kTimings; }
std::string RunLayout::timings(int rank) const { return timingsDir() + "/" + rankFile(rank, kJsonl); }
std::string RunLayout::progress(int rank) const { return timingsDir() + "/" + rankFile(rank, kProgress); }
std::string RunLayout::utilDir() const { return root_ + "/" + kUtil; }
std::string RunLayout::utilisation(int rank) const { return utilDir() + "/" + rankFile(rank, kJsonl); }
std::string RunLayout::ncclDir() const { return root_ + "/" + kNccl; }
std::string RunLayout::ncclDebugFile() const { return ncclDir() + "/%h.%p.log"; }

std::string RunLayout::report(ReportFile file) const {
  switch (file) {
    case ReportFile::kText: return root_ + "/report.txt";
    case ReportFile::kJson: return root_ + "/report.json";
    case ReportFile::kMarkdown: return root_ + "/report.md";
    case ReportFile::kHtml: return root_ + "/report.html";
    case ReportFile::kTrace: return root_ + "/trace.json";
  }
  return root_;
}

std::string RunLayout::attemptRelative(int k) { return fmt::format("{}/{}", kAttempts, k); }
RunLayout RunLayout::attempt(int k) const { return RunLayout(root_ + "/" + attemptRelative(k)); }

std::vector<int> RunLayout::attempts() const {
  std::vector<int> out;
  std::error_code ec;
  const fs::path dir = fs::path(root_) / kAttempts;
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
std::vector<std::string> RunLayout::exitFiles() const { return listFiles(ranksDir(), "", kExitJson); }
std::vector<std::string> RunLayout::utilisationFiles() const { return listFiles(utilDir(), "", kJsonl); }
std::vector<std::string> RunLayout::ncclLogs() const { return listFiles(ncclDir(), "", ".log"); }
std::vector<std::string> RunLayout::benchResults() const { return listFiles(root_, "ddpbench", ".json"); }

void RunLayout::makeRankDirectories(bool profiled) const {
  for (const char* sub : kPerAttempt)
    if (profiled || (sub != kUtil && sub != kNccl)) makeDirectories(root_ + "/" + sub, "run directory");
}

std::string RunLayout::keepAttempt(int k, bool profiled) const {
  const RunLayout kept = attempt(k);
  makeDirectories(kept.root(), "run directory");
  for (const char* sub : kPerAttempt) {
    std::error_code ec;
    const fs::path from = fs::path(root_) / sub;
    if (fs::exists(from, ec)) fs::rename(from, fs::path(kept.root()) / sub, ec);
    if (ec) throw Error(fmt::format("keeping attempt {}: moving {}: {}", k, from.string(), ec.message()));
  }
  makeRankDirectories(profiled);
  return attemptRelative(k);
}

std::string progressPathFor(const std::string& timingsFile) {
  std::string path = timingsFile;
  const std::string jsonl = kJsonl;
  if (path.size() > jsonl.size() && path.compare(path.size() - jsonl.size(), jsonl.size(), jsonl) == 0)
    path.erase(path.size() - jsonl.size());
  return path + kProgress;
}

}  // namespace ddp
