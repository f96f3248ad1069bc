// ddprof's subcommands (docs/profiler.md).
#include "ddp/profiler/cli.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/json_text.hpp"
#include "ddp/common/log.hpp"
#include "ddp/common/run_layout.hpp"
#include "ddp/profiler/projection/compare.hpp"
#include "ddp/profiler/projection/projection.hpp"
#include "ddp/profiler/render/report.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

namespace ddp::profiler {
namespace {

struct NcclOptions {
  std::vector<std::string> files;
  bool json = false;
};

struct ReportOptions {
  std::string dir;
  std::vector<std::string> projectTo;
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
  std::vector<std::string> projectTo;
  std::string format = "text";
};

struct ProjectCli {
  std::string dir, datasetSize, computeScale, precision = "fp32";
  std::vector<std::string> targets, prices;
  std::string format = "text";
};

struct InstancesCli {
  std::vector<std::string> names;
  bool json = false, erdma = false;
  std::string gpu;
};

// --dataset-size: a whole number of samples above 0.
int64_t parseDatasetSize(const std::string& text) {
  const double size = parsePositive(text, "--dataset-size");
  if (size != static_cast<double>(static_cast<int64_t>(size)) || size > 1e15)
    throw ConfigError(fmt::format("--dataset-size {} is not a whole number of samples", text));
  return static_cast<int64_t>(size);
}

int runNccl(const NcclOptions& o, std::ostream& out) {
  auto facts = readNcclLogs(o.files);
  if (o.json)
    out << jsonText(toJson(facts), 2) << "\n";
  else
    out << renderNcclSummary(facts);
  if (facts.linesRecognised == 0)
    throw ConfigError(fmt::format("no NCCL log line in {} (run with NCCL_DEBUG=INFO)",
                                  o.files.size() == 1 ? o.files[0] : "the files given"));
  return 0;
}

int runReport(const ReportOptions& o, std::ostream& out) {
  for (const auto& target : o.projectTo) parseTarget(target, 1);
  auto report = reportRun(o.dir, o.write, o.projectTo);
  out << (o.format == "json"   ? report.json
          : o.format == "md"   ? report.markdown
          : o.format == "html" ? report.html
                               : report.text);
  for (const auto& problem : report.problems) log::get("ddprof")->warn("{}", problem);
  if (!report.usable) throw ConfigError(fmt::format("nothing usable in {}", o.dir));
  return 0;
}

int runScaling(const ScalingOptions& o, std::ostream& out) {
  std::vector<RunData> runs;
  for (const auto& dir : o.dirs) runs.push_back(loadRun(dir));
  auto scaling = analyseScaling(runs);
  const auto format = o.json ? "json" : o.format;
  out << (format == "json"   ? jsonText(scalingJson(scaling), 2) + "\n"
          : format == "html" ? renderScalingHtml(scaling)
                             : renderScalingText(scaling));
  return 0;
}

int runCompare(const CompareCli& o, std::ostream& out) {
  // Every flag is checked before any run is read, so a typo costs nothing.
  CompareOptions options;
  options.a.label = o.labelA;
  options.b.label = o.labelB;
  if (!o.priceA.empty()) options.a.pricePerHour = parsePositive(o.priceA, "--price-a");
  if (!o.priceB.empty()) options.b.pricePerHour = parsePositive(o.priceB, "--price-b");
  if (!o.instanceA.empty()) options.a.instance = decodeInstance(o.instanceA);
  if (!o.instanceB.empty()) options.b.instance = decodeInstance(o.instanceB);
  if (!o.datasetSize.empty()) options.datasetSize = parseDatasetSize(o.datasetSize);
  for (const auto& target : o.projectTo) parseTarget(target, 1);
  options.projectTo = o.projectTo;
  const auto a = loadRun(o.dirA);
  const auto b = loadRun(o.dirB);
  const auto comparison = compareRuns(a, b, options);
  out << (o.format == "json"   ? jsonText(compareJson(comparison), 2) + "\n"
          : o.format == "md"   ? renderCompareMarkdown(comparison)
          : o.format == "html" ? renderCompareHtml(comparison)
                               : renderCompareText(comparison));
  return 0;
}

int runProject(const ProjectCli& o, std::ostream& out) {
  // Flags and targets are checked before the run is read.
  ProjectOptions options;
  options.targets = o.targets;
  options.fp16 = o.precision == "fp16";
  for (const auto& price : o.prices) {
    const auto eq = price.rfind('=');
    if (eq == std::string::npos || eq == 0)
      throw ConfigError(
          fmt::format("--price {}: expected TARGET=PRICE (the target as given to --to, or run=PRICE for "
                      "the measured run)",
                      price));
    const std::string name = price.substr(0, eq);
    for (const auto& [given, value] : options.prices)
      if (given == name) throw ConfigError(fmt::format("--price {}: a price for {} is given twice", price, name));
    options.prices.emplace_back(name, parsePositive(price.substr(eq + 1), "--price " + name));
  }
  if (!o.datasetSize.empty()) options.datasetSize = parseDatasetSize(o.datasetSize);
  if (!o.computeScale.empty()) options.computeScale = parsePositive(o.computeScale, "--compute-scale");
  for (const auto& target : o.targets) parseTarget(target, 1);
  const auto run = loadRun(o.dir);
  const auto projection = projectRun(run, options);
  out << (o.format == "json"   ? jsonText(projectionJson(projection), 2) + "\n"
          : o.format == "md"   ? renderProjectionMarkdown(projection)
          : o.format == "html" ? renderProjectionHtml(projection)
                               : renderProjectionText(projection));
  return 0;
}

// The types NAMES name (a family: all its types), or the whole catalog, filtered. Every name is
// decoded before anything is printed.
std::vector<Instance> selectInstances(const InstancesCli& o) {
  std::vector<Instance> chosen;
  const auto all = catalogInstances();
  if (o.names.empty()) chosen = all;
  for (const auto& name : o.names) {
    auto decoded = decodeInstance(name);
    if (decoded.size || decoded.family.kind == "unpublished") {
      chosen.push_back(std::move(decoded));
      continue;
    }
    for (const auto& i : all)
      if (i.family.family == decoded.family.family) chosen.push_back(i);
  }
  std::string gpu;
  if (!o.gpu.empty()) gpu = findGpu(o.gpu, "--gpu").gpu;
  std::vector<Instance> out;
  for (auto& i : chosen)
    if ((!o.erdma || i.family.erdma.value_or(false)) && (gpu.empty() || i.family.gpu == gpu))
      out.push_back(std::move(i));
  return out;
}

std::string orDash(const std::optional<double>& value) { return value ? fmt::format("{:g}", *value) : "-"; }

int runInstances(const InstancesCli& o, std::ostream& out) {
  const auto chosen = selectInstances(o);
  if (o.json) {
    auto j = nlohmann::json::array();
    for (const auto& i : chosen) j.push_back(toJson(i));
    out << jsonText(j, 2) << "\n";
    return 0;
  }
  out << fmt::format("{:<28} {:>5} {:<12} {:>6} {:>5} {:>7} {:<8} {:>7} {:>6} {}\n", "type", "GPUs", "GPU", "GB",
                     "vCPUs", "GiB", "link", "Gbit/s", "eRDMA", "bare metal");
  for (const auto& i : chosen) {
    const auto& f = i.family;
    const std::string type = i.size ? typeName(f, i.size->key) : i.name;
    if (!i.size) {
      out << fmt::format("{:<28} {}\n", type, f.kind == "unpublished" ? describe(i) : f.family + ": no size given");
      continue;
    }
    const auto& s = *i.size;
    const std::string gpus = !s.gpuShare.empty() ? s.gpuShare : s.gpus ? std::to_string(*s.gpus) : "slice";
    const std::string gpu = f.gpu.empty() ? "(unnamed)" : f.gpu.substr(f.gpu.rfind("NVIDIA ", 0) == 0 ? 7 : 0);
    const std::string memory = s.gpuMemoryGb   ? orDash(s.gpuMemoryGb)
                               : f.gpuMemoryGb ? std::to_string(*f.gpuMemoryGb)
                                               : "-";
    const std::string erdma = !f.erdma      ? "?"
                              : !*f.erdma   ? (f.rdmaKind.empty() ? "no" : "RoCE")
                              : f.erdmaGbps ? fmt::format("{:g}", *f.erdmaGbps)
                                            : "yes";
    out << fmt::format("{:<28} {:>5} {:<12} {:>6} {:>5} {:>7} {:<8} {:>7} {:>6} {}\n", type, gpus, gpu, memory, s.vcpus,
                       fmt::format("{:g}", s.memoryGib), f.linkClass().empty() ? "-" : f.linkClass(),
                       orDash(s.networkGbps), erdma, f.bareMetal ? "yes" : "no");
  }
  out << fmt::format(
      "{} type(s). eRDMA: its published Gbit/s, yes (no separate figure), no, RoCE (the SCC network) "
      "or ? (not published); - not published. Every figure's source: --json.\n",
      chosen.size());
  return 0;
}

CLI::App* addInstances(CLI::App& app, InstancesCli& o) {
  auto* cmd = app.add_subcommand("instances",
                                 "Alibaba Cloud GPU instance types from the vendor's documentation: decode names, "
                                 "or list and filter the catalog.\n"
                                 "Example: ddprof instances ecs.gn7e-c16g1.32xlarge ebmgn7ex --json");
  cmd->add_option("names", o.names, "Instance types (ecs.gn8v-2x.12xlarge) or families (gn8v); none: every type");
  cmd->add_flag("--json", o.json, "One JSON object per type, every figure with its source");
  cmd->add_flag("--erdma", o.erdma, "Only types with eRDMA (ERI)");
  cmd->add_option("--gpu", o.gpu, "Only types with this GPU (A100, H20, L20, ...)");
  return cmd;
}

CLI::App* addCompare(CLI::App& app, CompareCli& compare) {
  auto* compareCmd = app.add_subcommand("compare",
                                        "Two runs of the same job side by side (e.g. an NVLink instance against "
                                        "ERI multi-node): transports, step time, throughput, efficiency, "
                                        "exposed communication, busbw, findings and, with prices, cost per "
                                        "1 M samples.\nExample: ddprof compare runs/gn7 runs/gn7i-eri "
                                        "--price-a 30 --price-b 12 --instance-a ecs.gn7-c13g1.26xlarge");
  compareCmd->add_option("run_a", compare.dirA, "Run directory A")->required();
  compareCmd->add_option("run_b", compare.dirB, "Run directory B")->required();
  compareCmd->add_option("--price-a", compare.priceA, "A's price per instance-hour (any currency; e.g. 30.5)");
  compareCmd->add_option("--price-b", compare.priceB, "B's price per instance-hour, in the same currency");
  compareCmd->add_option("--label-a", compare.labelA, "A's name in the table (default: its directory name)");
  compareCmd->add_option("--label-b", compare.labelB, "B's name in the table");
  compareCmd->add_option("--instance-a", compare.instanceA,
                         "A's instance type (e.g. ecs.gn7e-c16g1.32xlarge, ecs.ebmgn7ex.32xlarge or gn7e)");
  compareCmd->add_option("--instance-b", compare.instanceB, "B's instance type");
  compareCmd->add_option("--dataset-size", compare.datasetSize,
                         "Samples per epoch, for the time and cost of an epoch (e.g. 1281167)");
  compareCmd->add_option("--project-to", compare.projectTo,
                         "Also project both runs onto this target (as ddprof project --to); repeat for more");
  compareCmd->add_option("--format", compare.format, "text | json | md | html")
      ->check(CLI::IsMember({"text", "json", "md", "html"}))
      ->capture_default_str();
  return compareCmd;
}

CLI::App* addProject(CLI::App& app, ProjectCli& project) {
  auto* projectCmd = app.add_subcommand(
      "project",
      "Project a profiled run onto other instance types and host counts before renting them: step time, "
      "throughput, scaling efficiency, cost per 1 M samples (docs/projection.md).\nExample: ddprof project "
      "ddprun-runs/<run> --to ecs.gn7e-c16g1.32xlarge --to hosts=2,instance=ecs.ebmgn7ex.32xlarge "
      "--price run=6 --price ecs.gn7e-c16g1.32xlarge=40");
  projectCmd->add_option("run_dir", project.dir, "The measured run directory (with step timings)")->required();
  projectCmd
      ->add_option("--to", project.targets,
                   "A target: an instance name (ecs.gn7e-c16g1.32xlarge), a family (gn7e), or a shape "
                   "hosts=H,gpus=G[,intra=KIND[:BW]][,inter=KIND:BW][,gpu=A100|cpu][,instance=NAME][,bench=FILE: the "
                   "target's allreduce measured there, ddpbench --json or nccl-tests output]; repeat for more")
      ->required();
  projectCmd->add_option(
      "--price", project.prices,
      "TARGET=PRICE per instance-hour (TARGET as given to --to, or run for the measured run); repeat");
  projectCmd->add_option("--dataset-size", project.datasetSize, "Samples per epoch, for the time and cost of an epoch");
  projectCmd->add_option("--compute-scale", project.computeScale,
                         "Target compute time / measured compute time, when you know it (e.g. from one profiled step "
                         "on the target); default: from the catalog's GPU throughput");
  projectCmd->add_option("--precision", project.precision, "fp32 | fp16: which GPU throughput the compute ratio uses")
      ->check(CLI::IsMember({"fp32", "fp16"}))
      ->capture_default_str();
  projectCmd->add_option("--format", project.format, "text | json | md | html")
      ->check(CLI::IsMember({"text", "json", "md", "html"}))
      ->capture_default_str();
  return projectCmd;
}

}  // namespace

int ddprofMain(const std::vector<std::string>& args, std::ostream& out) {
  CLI::App app{"ddprof: profile a ddprun run — NCCL log facts, step timings, scaling, diagnosis.", "ddprof"};
  app.require_subcommand(1);
  NcclOptions nccl;
  auto* ncclCmd = app.add_subcommand("nccl",
                                     "Facts from NCCL_DEBUG logs: version, ranks, hosts, network, "
                                     "transport matrix, GDR, errors.\n"
                                     "Example: ddprof nccl RUN/nccl/*.log --json");
  ncclCmd->add_option("files", nccl.files, "NCCL_DEBUG=INFO output files")->required();
  ncclCmd->add_flag("--json", nccl.json, "Print the facts as one JSON object");
  ReportOptions report;
  auto* reportCmd = app.add_subcommand("report",
                                       "Analyse a run directory: findings with evidence and fixes, step "
                                       "phases, stragglers, NCCL facts. Writes report.txt, report.json and "
                                       "report.md into it.\nExample: ddprof report ddprun-runs/<run> --format md");
  reportCmd
      ->add_option("run_dir", report.dir,
                   "The run directory (ddprun's, or one with " + RunLayout::timingsPattern() + ")")
      ->required();
  reportCmd->add_option("--format", report.format, "What to print: text | json | md | html")
      ->check(CLI::IsMember({"text", "json", "md", "html"}))
      ->capture_default_str();
  reportCmd->add_option("--project-to", report.projectTo,
                        "Add a projection of the run onto this target (as ddprof project --to); repeat for more");
  bool noWrite = false;
  reportCmd->add_flag("--no-write", noWrite, "Print only; do not write the report files");
  ScalingOptions scaling;
  auto* scalingCmd = app.add_subcommand("scaling",
                                        "Strong or weak scaling efficiency of the same job run at "
                                        "different world sizes.\nExample: ddprof scaling runs/np1 runs/np2 runs/np4");
  scalingCmd->add_option("run_dirs", scaling.dirs, "Run directories, two or more")->required();
  scalingCmd->add_flag("--json", scaling.json, "Print JSON (same as --format json)");
  scalingCmd->add_option("--format", scaling.format, "text | json | html (a chart against ideal)")
      ->check(CLI::IsMember({"text", "json", "html"}))
      ->capture_default_str();
  CompareCli compare;
  addCompare(app, compare);  // the subcommand left when no other was given
  ProjectCli project;
  auto* projectCmd = addProject(app, project);
  InstancesCli instances;
  auto* instancesCmd = addInstances(app, instances);
  std::string logLevel = "info";
  app.add_option("--log-level", logLevel, "ddprof's own messages (what could not be read): error, warn, info or debug");
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 takes them in reverse
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, out);
  } catch (const CLI::ParseError& e) {
    throw ConfigError(fmt::format("{} (see --help)", e.what()));
  }
  log::setLevel(log::parseLevel(logLevel, "--log-level"));
  report.write = !noWrite;
  if (*ncclCmd) return runNccl(nccl, out);
  if (*reportCmd) return runReport(report, out);
  if (*scalingCmd) return runScaling(scaling, out);
  if (*projectCmd) return runProject(project, out);
  if (*instancesCmd) return runInstances(instances, out);
  return runCompare(compare, out);
}

}  // namespace ddp::profiler
