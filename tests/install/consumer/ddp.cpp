// Runs under mpirun: wraps a linear layer in the installed DistributedDataParallel over the mpi
// backend and checks the averaged gradient against its closed form.
#include "ddp/comm/distributed_data_parallel.hpp"
#include "ddp/comm/mpi_backend.hpp"

#include <torch/torch.h>

#include <iostream>

int main() {
  auto world = ddp::comm::discoverWorld(ddp::Environment::fromProcess());
  auto backend = ddp::comm::makeMpiBackend(world, {});
  auto layer = torch::nn::Linear(torch::nn::LinearOptions(4, 1).bias(false));
  ddp::comm::DistributedDataParallel ddp(layer.ptr(), *backend);
  // d(sum(w . x))/dw = x = rank + 1 on each rank: the average is (n + 1) / 2.
  auto x = torch::full({1, 4}, static_cast<float>(world.rank + 1));
  ddp.forward([&] { return layer->forward(x); }).sum().backward();
  const float expected = (world.size + 1) / 2.0f;
  const bool ok = torch::allclose(layer->weight.grad(), torch::full({1, 4}, expected));
  std::cout << "ddp consumer rank " << world.rank << ": gradient " << (ok ? "averaged" : "WRONG") << "\n";
  return ok ? 0 : 1;
}
