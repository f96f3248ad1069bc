// Runs under mpirun: picks each backend the installed package registers by name (ddp::backends)
// and checks an allreduce of the ranks against its closed form, 0 + 1 + ... + (n - 1).
#include "ddp/comm/registry.hpp"
#include "ddp/comm/world.hpp"

#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  const auto world = ddp::comm::discoverWorld(ddp::Environment::fromProcess());
  int failures = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    auto backend = ddp::comm::builtinBackends().create(name, world);
    std::vector<double> send(1000, world.rank), recv(send.size(), -1);
    backend->allreduce(send.data(), recv.data(), send.size(), ddp::comm::DType::kFloat64, ddp::comm::ReduceOp::kSum)
        ->wait();
    const double expected = world.size * (world.size - 1) / 2.0;
    bool ok = true;
    for (double v : recv) ok = ok && v == expected;
    std::cout << "consumer rank " << world.rank << " of " << world.size << ": backend " << name
              << " by name: allreduce " << (ok ? "correct" : "WRONG") << "\n";
    failures += !ok;
  }
  return failures == 0 ? 0 : 1;
}
