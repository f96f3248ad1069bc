// ddpbench: nccl-tests-style bandwidth sweep of the collectives of any ddprun backend.
// Thin: parse options, build the backend, hand each collective to the sweep engine, print.

#include "ddp/comm/bench/engine.hpp"
#include "ddp/comm/bench/report.hpp"
#include "ddp/comm/mpi_session.hpp"
#include "ddp/comm/registry.hpp"
#include "ddp/comm/sizes.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/files.hpp"
#include "ddp/common/log.hpp"
#include "ddp/config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace {

using namespace ddp::comm;

struct Options {
  std::string backend = "mpi";
  std::string op = "allreduce";
  std::string minBytes = "8";
  std::string maxBytes = "128M";
  double factor = 2.0;
  int iters = 20;
  int warmup = 5;
  int check = 1;
  std::string dtype = "float";
  std::string redop = "sum";
  int root = 0;
  std::string json;
  std::string interface;
  bool listBackends = false;
};

// Validated settings: everything a user can get wrong fails here, before MPI starts.
struct Plan {
  std::vector<const bench::Collective*> collectives;
  std::vector<DType> dtypes;
  std::vector<ReduceOp> redops;
  bench::SweepOptions sweep;
};

// One named value, or "all" of them; an unknown name fails with the list.
template <typename T, size_t N>
std::vector<T> parseChoice(const std::string& text, const T (&all)[N], std::optional<T> (*parse)(std::string_view),
                           std::string_view (*name)(T), std::string_view what) {
  if (text == "all") return std::vector<T>(std::begin(all), std::end(all));
  if (const auto value = parse(text)) return {*value};
  std::vector<std::string_view> names;
  for (const T& value : all) names.push_back(name(value));
  throw ddp::ConfigError(fmt::format("unknown {} '{}' (known: {}, all)", what, text, fmt::join(names, ", ")));
}

Plan makePlan(const Options& o) {
  Plan plan;
  if (o.op == "all") {
    for (const auto& c : bench::collectives()) plan.collectives.push_back(&c);
  } else if (const auto* c = bench::findCollective(o.op)) {
    plan.collectives.push_back(c);
  } else {
    std::vector<std::string_view> names;
    for (const auto& known : bench::collectives()) names.push_back(known.name);
    throw ddp::ConfigError(fmt::format("unknown op '{}' (known: {}, all)", o.op, fmt::join(names, ", ")));
  }
  auto& s = plan.sweep;
  s.minBytes = parseSize(o.minBytes, "minimum size (-b)");
  s.maxBytes = parseSize(o.maxBytes, "maximum size (-e)");
  s.factor = o.factor;
  s.iters = o.iters;
  s.warmup = o.warmup;
  s.check = o.check != 0;
  s.root = o.root;
  plan.dtypes = parseChoice(o.dtype, kAllDTypes, parseDType, dtypeName, "type (-d)");
  plan.redops = parseChoice(o.redop, kAllReduceOps, parseReduceOp, reduceOpName, "reduction (-o)");
  bench::validate(s, std::max(1, s.root + 1));  // the root is checked against the world later
  if (!o.json.empty()) {
    const auto dir = std::filesystem::absolute(o.json).parent_path();
    if (!std::filesystem::is_directory(dir)) {
      throw ddp::ConfigError(fmt::format("--json {}: directory {} does not exist", o.json, dir.string()));
    }
  }
  return plan;
}

// Written next to the target and renamed over it, so a reader never sees half a file.
int run(const Options& o) {
  const Plan plan = makePlan(o);
  const auto environment = ddp::Environment::fromProcess();
  const WorldInfo world = discoverWorld(environment);
  bench::validate(plan.sweep, world.size);
  auto backendOptions = BackendOptions::fromEnvironment(environment);
  if (!o.interface.empty()) backendOptions.interface = o.interface;
  auto backend = builtinBackends().create(o.backend, world, backendOptions);

  const bool printer = backend->rank() == 0;
  nlohmann::json rows = nlohmann::json::array();
  int64_t wrong = 0;
  for (const auto* collective : plan.collectives) {
    if (printer) {
      std::cout << bench::tableHeader(backend->name(), collective->name, backend->size(), plan.sweep) << std::flush;
    }
    std::vector<bench::Result> results;
    auto sweep = plan.sweep;
    for (const DType dtype : plan.dtypes) {
      for (const ReduceOp redop : plan.redops) {
        sweep.dtype = dtype;
        sweep.op = redop;
        bench::runSweep(*backend, *collective, sweep,
                        [&](const bench::Result& out, const std::optional<bench::Result>& in) {
                          results.push_back(out);
                          if (in) results.push_back(*in);
                          if (printer) std::cout << bench::tableRow(out, in) << std::flush;
                        });
        if (!collective->hasReduceOp) break;  // one pass: the reduction does not apply
      }
    }
    for (const auto& r : results) {
      rows.push_back(bench::toJson(r));
      wrong += std::max<int64_t>(r.wrong, 0);
    }
    if (printer) std::cout << bench::tableFooter(results) << std::flush;
  }
  if (printer && !o.json.empty()) {
    const nlohmann::json document = {{"backend", backend->name()}, {"nranks", backend->size()}, {"rows", rows}};
    ddp::writeFileAtomically(o.json, document.dump(2) + "\n");
  }
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "ddpbench: nccl-tests-style sweep of collectives over a ddprun backend.\n"
      "Example: mpirun -np 4 ddpbench --backend gloo --op allreduce -b 1K -e 256M -f 4 -c 1"};
  app.add_option("--backend", o.backend, "Backend: mpi, gloo, nccl (see --list-backends)")->capture_default_str();
  app.add_option("--op", o.op, "allreduce|allgather|reducescatter|broadcast|alltoall|all")->capture_default_str();
  app.add_option("-b,--minbytes", o.minBytes, "Smallest size, K/M/G suffixes (e.g. 1K)")->capture_default_str();
  app.add_option("-e,--maxbytes", o.maxBytes, "Largest size, K/M/G suffixes (e.g. 256M)")->capture_default_str();
  app.add_option("-f,--stepfactor", o.factor, "Size multiplier between rows (> 1)")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "Timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", o.warmup, "Untimed iterations per size")->capture_default_str();
  app.add_option("-c,--check", o.check, "1: check every result against closed-form values")->capture_default_str();
  app.add_option("-d,--datatype", o.dtype, "float|double|int32|int64|half|bf16|all")->capture_default_str();
  app.add_option("-o,--op_type", o.redop, "Reduction: sum|prod|min|max|avg|all")->capture_default_str();
  app.add_option("-r,--root", o.root, "Root rank of broadcast")->capture_default_str();
  app.add_option("--json", o.json, "Also write the rows as JSON to this file (rank 0)");
  app.add_option("--interface", o.interface, "Network interface for gloo (default: the one reaching rank 0)");
  app.add_flag("--list-backends", o.listBackends, "List the backends of this build and exit");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (isFirstRankProcess()) ddp::log::get("ddpbench")->error("{} (see --help)", e.what());
    return 2;
  }
  if (o.listBackends) {
    for (const auto& name : builtinBackends().names()) std::cout << name << "\n";
    return 0;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    const int code = ddp::exitCodeFor(e);
    if (!MpiSession::active() || isFirstRankProcess() || code != 2) ddp::log::get("ddpbench")->error("{}", e.what());
    MpiSession::abortJob(code);
    return code;
  }
}
