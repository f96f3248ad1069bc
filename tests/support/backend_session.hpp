#pragma once
// The main of the multi-rank Catch2 tests: `--backend NAME` picks the backend, created once
// from the process environment (under mpirun) and shared by every test case; every rank runs
// the same cases in the same order, then meets at a barrier.
#include "ddp/comm/registry.hpp"

#include <catch2/catch.hpp>

#include <iostream>
#include <memory>
#include <string>

namespace ddp::tests {

inline int runWithBackend(int argc, char** argv, std::unique_ptr<comm::Backend>& backend, const char* program) {
  Catch::Session session;
  std::string name = "mpi";
  using namespace Catch::clara;
  session.cli(session.cli() | Opt(name, "name")["--backend"]("backend to test"));
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  int rc = 0;
  try {
    const auto environment = Environment::fromProcess();
    backend = comm::builtinBackends().create(name, comm::discoverWorld(environment),
                                             comm::BackendOptions::fromEnvironment(environment));
    rc = session.run();
    backend->barrier()->wait();
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << "\n";
    rc = 1;
  }
  backend.reset();
  return rc;
}

}  // namespace ddp::tests
