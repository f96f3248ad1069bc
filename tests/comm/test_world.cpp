#include "ddp/comm/world.hpp"
#include "ddp/common/error.hpp"

#include <catch2/catch.hpp>

using namespace ddp::comm;
using ddp::ConfigError;
using ddp::Environment;

namespace {
Environment env(std::map<std::string, std::string, std::less<>> vars) { return Environment(std::move(vars)); }
}  // namespace

TEST_CASE("no launcher variables: a single process", "[comm][world]") {
  const auto w = discoverWorld(env({{"HOME", "/root"}}));
  CHECK(w.source == WorldSource::kSingle);
  CHECK(w.rank == 0);
  CHECK(w.size == 1);
  CHECK(w.localRank == 0);
  CHECK(w.localSize == 1);
  CHECK_FALSE(w.masterAddr);
  CHECK_FALSE(w.hasMpi());
}

TEST_CASE("Open MPI variables", "[comm][world]") {
  const auto w = discoverWorld(env({{"OMPI_COMM_WORLD_RANK", "5"},
                                    {"OMPI_COMM_WORLD_SIZE", "8"},
                                    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}));
  CHECK(w.source == WorldSource::kOpenMpi);
  CHECK(w.rank == 5);
  CHECK(w.size == 8);
  CHECK(w.localRank == 1);
  CHECK(w.localSize == 4);
  CHECK(w.nodeRank == 1);
  CHECK(w.hasMpi());
}

TEST_CASE("Slurm variables inside a job step", "[comm][world]") {
  const auto w = discoverWorld(env({{"SLURM_STEP_ID", "0"},
                                    {"SLURM_PROCID", "6"},
                                    {"SLURM_NTASKS", "7"},
                                    {"SLURM_LOCALID", "2"},
                                    {"SLURM_NODEID", "1"},
                                    {"SLURM_STEP_TASKS_PER_NODE", "4,3"}}));
  CHECK(w.source == WorldSource::kSlurm);
  CHECK(w.rank == 6);
  CHECK(w.size == 7);
  CHECK(w.localRank == 2);
  CHECK(w.localSize == 3);
  CHECK(w.nodeRank == 1);
}

TEST_CASE("a Slurm batch script is not a world of SLURM_NTASKS", "[comm][world]") {
  const auto w = discoverWorld(env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "16"}}));
  CHECK(w.source == WorldSource::kSingle);
  CHECK(w.size == 1);
}

TEST_CASE("mpirun inside a Slurm allocation: Open MPI wins", "[comm][world]") {
  const auto w = discoverWorld(env({{"SLURM_STEP_ID", "0"},
                                    {"SLURM_PROCID", "0"},
                                    {"SLURM_NTASKS", "1"},
                                    {"OMPI_COMM_WORLD_RANK", "3"},
                                    {"OMPI_COMM_WORLD_SIZE", "4"}}));
  CHECK(w.source == WorldSource::kOpenMpi);
  CHECK(w.rank == 3);
}

TEST_CASE("torchrun-style variables", "[comm][world]") {
  const auto w = discoverWorld(env({{"RANK", "3"},
                                    {"WORLD_SIZE", "4"},
                                    {"LOCAL_RANK", "1"},
                                    {"LOCAL_WORLD_SIZE", "2"},
                                    {"GROUP_RANK", "1"},
                                    {"MASTER_ADDR", "10.0.0.1"},
                                    {"MASTER_PORT", "29500"}}));
  CHECK(w.source == WorldSource::kTorchrun);
  CHECK(w.rank == 3);
  CHECK(w.localRank == 1);
  CHECK(w.localSize == 2);
  CHECK(w.nodeRank == 1);
  CHECK(w.masterAddr == std::optional<std::string>("10.0.0.1"));
  CHECK(w.masterPort == std::optional<int>(29500));
  CHECK_FALSE(w.hasMpi());
}

TEST_CASE("ddprun's contract variables agree with Open MPI's", "[comm][world]") {
  const auto w = discoverWorld(env({{"OMPI_COMM_WORLD_RANK", "1"},
                                    {"OMPI_COMM_WORLD_SIZE", "2"},
                                    {"RANK", "1"},
                                    {"WORLD_SIZE", "2"},
                                    {"NODE_RANK", "1"}}));
  CHECK(w.source == WorldSource::kOpenMpi);
  CHECK(w.nodeRank == 1);
}

TEST_CASE("partial, malformed and conflicting variables are clear errors", "[comm][world]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(discoverWorld(env({{"RANK", "0"}})), Contains("RANK is set but WORLD_SIZE is not"));
  CHECK_THROWS_WITH(discoverWorld(env({{"OMPI_COMM_WORLD_SIZE", "2"}})),
                    Contains("OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not"));
  CHECK_THROWS_WITH(discoverWorld(env({{"RANK", "two"}, {"WORLD_SIZE", "4"}})),
                    Contains("RANK='two' is not an integer"));
  CHECK_THROWS_WITH(discoverWorld(env({{"RANK", "4"}, {"WORLD_SIZE", "4"}})),
                    Contains("RANK=4 is not below WORLD_SIZE=4"));
  CHECK_THROWS_WITH(discoverWorld(env({{"RANK", "0"}, {"WORLD_SIZE", "0"}})), Contains("out of range"));
  CHECK_THROWS_WITH(
      discoverWorld(
          env({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"RANK", "0"}, {"WORLD_SIZE", "2"}})),
      Contains("conflicting world"));
  CHECK_THROWS_WITH(discoverWorld(env({{"LOCAL_RANK", "0"}})),
                    Contains("LOCAL_RANK is set but RANK and WORLD_SIZE are not"));
  CHECK_THROWS_WITH(discoverWorld(env({{"MASTER_ADDR", "h"}})), Contains("MASTER_ADDR is set but MASTER_PORT is not"));
  CHECK_THROWS_WITH(discoverWorld(env({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}})),
                    Contains("MASTER_PORT=70000 is out of range"));
  CHECK_THROWS_WITH(
      discoverWorld(env({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}})),
      Contains("local rank 2 is not below the local world size 2"));
  CHECK_THROWS_WITH(discoverWorld(env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"NODE_RANK", "0"}, {"GROUP_RANK", "1"}})),
                    Contains("disagree"));
  CHECK_THROWS_AS(discoverWorld(env({{"RANK", ""}, {"WORLD_SIZE", "2"}})), ConfigError);
}

TEST_CASE("Slurm tasks-per-node strings", "[comm][world]") {
  CHECK(slurmTasksOnNode("4", 0) == 4);
  CHECK(slurmTasksOnNode("4(x2),3", 0) == 4);
  CHECK(slurmTasksOnNode("4(x2),3", 1) == 4);
  CHECK(slurmTasksOnNode("4(x2),3", 2) == 3);
  CHECK_THROWS_AS(slurmTasksOnNode("4(x2),3", 3), ConfigError);
  CHECK_THROWS_AS(slurmTasksOnNode("4(2)", 0), ConfigError);
  CHECK_THROWS_AS(slurmTasksOnNode("", 0), ConfigError);
  CHECK_THROWS_AS(slurmTasksOnNode("x", 0), ConfigError);
}
