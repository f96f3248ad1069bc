// ddprof: reads what a run left behind and says why it scaled the way it did (docs/profiler.md).
// Examples: ddprof report ddprun-runs/2026-11-29-train
//           ddprof nccl run/nccl/*.log --json
//           ddprof scaling runs/np1 runs/np2 runs/np4
#include "ddp/comm/error.hpp"
#include "ddp/profiler/report.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

namespace {

using namespace ddp::profiler;

struct NcclOptions {
  std::vector<std::string> files;
  bool json = false;
};

struct ReportOptions {
  std::string dir;
  std::string format = "text";
  bool write = true;
};

struct ScalingOptions {
  std::vector<std::string> dirs;
  bool json = false;
};

int runNccl(const NcclOptions& o) {
  auto facts = readNcclLogs(o.files);
  if (o.json)
    std::cout << toJson(facts).dump(2) << "\n";
  else
    std::cout << renderNcclSummary(facts);
  if (facts.linesRecognised == 0) {
    std::cerr << "ddprof: no NCCL log line in " << (o.files.size() == 1 ? o.files[0] : "the files given")
              << " (run with NCCL_DEBUG=INFO)\n";
    return 2;
  }
  return 0;
}

int runReport(const ReportOptions& o) {
  auto report = reportRun(o.dir, o.write);
  std::cout << (o.format == "json" ? report.json : o.format == "md" ? report.markdown : report.text);
  for (const auto& problem : report.problems) std::cerr << "ddprof: " << problem << "\n";
  if (!report.usable) {
    std::cerr << "ddprof: nothing usable in " << o.dir << "\n";
    return 2;
  }
  return 0;
}

int runScaling(const ScalingOptions& o) {
  std::vector<RunData> runs;
  for (const auto& dir : o.dirs) runs.push_back(loadRun(dir));
  auto scaling = analyseScaling(runs);
  std::cout << (o.json ? scalingJson(scaling).dump(2) + "\n" : renderScalingText(scaling));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ddprof: profile a ddprun run — NCCL log facts, step timings, scaling, diagnosis."};
  app.require_subcommand(1);
  NcclOptions nccl;
  auto* ncclCmd = app.add_subcommand("nccl", "Facts from NCCL_DEBUG logs: version, ranks, hosts, network, "
                                             "transport matrix, GDR, errors.\n"
                                             "Example: ddprof nccl run/nccl/*.log --json");
  ncclCmd->add_option("files", nccl.files, "NCCL_DEBUG=INFO output files")->required();
  ncclCmd->add_flag("--json", nccl.json, "Print the facts as one JSON object");
  ReportOptions report;
  auto* reportCmd = app.add_subcommand("report", "Analyse a run directory: findings with evidence and fixes, step "
                                                 "phases, stragglers, NCCL facts. Writes report.txt, report.json and "
                                                 "report.md into it.\nExample: ddprof report ddprun-runs/<run> --format md");
  reportCmd->add_option("run_dir", report.dir, "The run directory (ddprun's, or one with timings/*.jsonl)")->required();
  reportCmd->add_option("--format", report.format, "What to print: text | json | md")
      ->check(CLI::IsMember({"text", "json", "md"}))->capture_default_str();
  bool noWrite = false;
  reportCmd->add_flag("--no-write", noWrite, "Print only; do not write the report files");
  ScalingOptions scaling;
  auto* scalingCmd = app.add_subcommand("scaling", "Strong or weak scaling efficiency of the same job run at "
                                                   "different world sizes.\nExample: ddprof scaling runs/np1 runs/np2 runs/np4");
  scalingCmd->add_option("run_dirs", scaling.dirs, "Run directories, two or more")->required();
  scalingCmd->add_flag("--json", scaling.json, "Print JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "ddprof: " << e.what() << " (see --help)\n";
    return 2;
  }
  report.write = !noWrite;
  try {
    if (*ncclCmd) return runNccl(nccl);
    if (*reportCmd) return runReport(report);
    if (*scalingCmd) return runScaling(scaling);
  } catch (const std::exception& e) {
    std::cerr << "ddprof: " << e.what() << "\n";
    return ddp::exitCodeFor(e);
  }
  return 0;
}
