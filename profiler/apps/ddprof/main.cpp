// ddprof: reads what a run left behind and says why it scaled the way it did.
// Example: ddprof nccl ddprun-runs/*/nccl/*.log --json
#include "ddp/comm/error.hpp"
#include "ddp/profiler/nccl_facts.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

namespace {

struct NcclOptions {
  std::vector<std::string> files;
  bool json = false;
};

int runNccl(const NcclOptions& o) {
  auto facts = ddp::profiler::readNcclLogs(o.files);
  if (o.json)
    std::cout << ddp::profiler::toJson(facts).dump(2) << "\n";
  else
    std::cout << ddp::profiler::renderNcclSummary(facts);
  if (facts.linesRecognised == 0) {
    std::cerr << "ddprof: no NCCL log line in " << (o.files.size() == 1 ? o.files[0] : "the files given")
              << " (run with NCCL_DEBUG=INFO)\n";
    return 2;
  }
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "ddprof: " << e.what() << " (see --help)\n";
    return 2;
  }
  try {
    if (*ncclCmd) return runNccl(nccl);
  } catch (const std::exception& e) {
    std::cerr << "ddprof: " << e.what() << "\n";
    return ddp::exitCodeFor(e);
  }
  return 0;
}
