#include "ddp/comm/world.hpp"

#include <iostream>

int main() {
  const auto world = ddp::comm::discoverWorld(ddp::Environment({{"RANK", "1"}, {"WORLD_SIZE", "2"}}));
  std::cout << "rank " << world.rank << " of " << world.size << "\n";
  return world.rank == 1 && world.size == 2 ? 0 : 1;
}
