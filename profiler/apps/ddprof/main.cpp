// ddprof: reads what a run left behind and says why it scaled the way it did (docs/profiler.md).
// Examples: ddprof report ddprun-runs/2026-11-29-train
//           ddprof nccl run/nccl/*.log --json
//           ddprof scaling runs/np1 runs/np2 runs/np4
//           ddprof compare runs/nvlink runs/eri --price-a 30 --price-b 12 --dataset-size 1281167
#include "ddp/common/error.hpp"
#include "ddp/common/json_text.hpp"
#include "ddp/profiler/compare.hpp"
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
  std::string format = "text";
};

struct CompareCli {
  std::string dirA, dirB, labelA, labelB, priceA, priceB, instanceA, instanceB, datasetSize;
  std::string format = "text";
};

int runNccl(const NcclOptions& o) {
  auto facts = readNcclLogs(o.files);
  if (o.json)
    std::cout << ddp::jsonText(toJson(facts), 2) << "\n";
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
  std::cout << (o.format == "json" ? report.json : o.format == "md" ? report.markdown : o.format == "html" ? report.html : report.text);
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
  const auto format = o.json ? "json" : o.format;
  std::cout << (format == "json" ? ddp::jsonText(scalingJson(scaling), 2) + "\n"
                : format == "html" ? renderScalingHtml(scaling) : renderScalingText(scaling));
  return 0;
}

int runCompare(const CompareCli& o) {
  // Every flag is checked before any run is read, so a typo costs nothing.
  CompareOptions options;
  options.a.label = o.labelA;
  options.b.label = o.labelB;
  if (!o.priceA.empty()) options.a.pricePerHour = parsePositive(o.priceA, "--price-a");
  if (!o.priceB.empty()) options.b.pricePerHour = parsePositive(o.priceB, "--price-b");
  if (!o.instanceA.empty()) options.a.instance = decodeInstance(o.instanceA);
  if (!o.instanceB.empty()) options.b.instance = decodeInstance(o.instanceB);
  if (!o.datasetSize.empty()) {
    const double size = parsePositive(o.datasetSize, "--dataset-size");
    if (size != static_cast<double>(static_cast<int64_t>(size)) || size > 1e15)
      throw ddp::ConfigError(fmt::format("--dataset-size {} is not a whole number of samples", o.datasetSize));
    options.datasetSize = static_cast<int64_t>(size);
  }
  const auto a = loadRun(o.dirA);
  const auto b = loadRun(o.dirB);
  const auto comparison = compareRuns(a, b, options);
  std::cout << (o.format == "json" ? ddp::jsonText(compareJson(comparison), 2) + "\n"
                : o.format == "md" ? renderCompareMarkdown(comparison)
                : o.format == "html" ? renderCompareHtml(comparison) : renderCompareText(comparison));
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
  reportCmd->add_option("--format", report.format, "What to print: text | json | md | html")
      ->check(CLI::IsMember({"text", "json", "md", "html"}))->capture_default_str();
  bool noWrite = false;
  reportCmd->add_flag("--no-write", noWrite, "Print only; do not write the report files");
  ScalingOptions scaling;
  auto* scalingCmd = app.add_subcommand("scaling", "Strong or weak scaling efficiency of the same job run at "
                                                   "different world sizes.\nExample: ddprof scaling runs/np1 runs/np2 runs/np4");
  scalingCmd->add_option("run_dirs", scaling.dirs, "Run directories, two or more")->required();
  scalingCmd->add_flag("--json", scaling.json, "Print JSON (same as --format json)");
  scalingCmd->add_option("--format", scaling.format, "text | json | html (a chart against ideal)")
      ->check(CLI::IsMember({"text", "json", "html"}))->capture_default_str();
  CompareCli compare;
  auto* compareCmd = app.add_subcommand("compare", "Two runs of the same job side by side (e.g. an NVLink instance against "
                                                   "ERI multi-node): transports, step time, throughput, efficiency, "
                                                   "exposed communication, busbw, findings and, with prices, cost per "
                                                   "1 M samples.\nExample: ddprof compare runs/gn7 runs/gn7i-eri "
                                                   "--price-a 30 --price-b 12 --instance-a ecs.gn7-c96g8.24xlarge");
  compareCmd->add_option("run_a", compare.dirA, "Run directory A")->required();
  compareCmd->add_option("run_b", compare.dirB, "Run directory B")->required();
  compareCmd->add_option("--price-a", compare.priceA, "A's price per instance-hour (any currency; e.g. 30.5)");
  compareCmd->add_option("--price-b", compare.priceB, "B's price per instance-hour, in the same currency");
  compareCmd->add_option("--label-a", compare.labelA, "A's name in the table (default: its directory name)");
  compareCmd->add_option("--label-b", compare.labelB, "B's name in the table");
  compareCmd->add_option("--instance-a", compare.instanceA, "A's instance type (e.g. ecs.gn7e-c32g1.32xlarge or gn7e)");
  compareCmd->add_option("--instance-b", compare.instanceB, "B's instance type");
  compareCmd->add_option("--dataset-size", compare.datasetSize, "Samples per epoch, for the time and cost of an epoch (e.g. 1281167)");
  compareCmd->add_option("--format", compare.format, "text | json | md | html")
      ->check(CLI::IsMember({"text", "json", "md", "html"}))->capture_default_str();
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
    if (*compareCmd) return runCompare(compare);
  } catch (const std::exception& e) {
    std::cerr << "ddprof: " << e.what() << "\n";
    return ddp::exitCodeFor(e);
  }
  return 0;
}
