// Hosts and slots: -H lists, hostfiles (good and bad), Slurm allocations.
#define CATCH_CONFIG_MAIN
#include "ddp/common/error.hpp"
#include "ddp/launcher/hosts.hpp"

#include <catch2/catch.hpp>

using namespace ddp::launcher;
using Hosts = std::vector<HostSlots>;

TEST_CASE("host lists given with -H", "[launcher][hosts]") {
  CHECK(parseHostList("a:8,b:8") == Hosts{{"a", 8}, {"b", 8}});
  CHECK(parseHostList("node-1,node-2.example") == Hosts{{"node-1", 1}, {"node-2.example", 1}});
  CHECK(parseHostList("a:2,a:3") == Hosts{{"a", 5}});
  CHECK_THROWS_WITH(parseHostList("a:0"), Catch::Contains("slots of 'a:0' must be a positive integer"));
  CHECK_THROWS_WITH(parseHostList("a:x"), Catch::Contains("must be a positive integer"));
  CHECK_THROWS_WITH(parseHostList("a:2,,b"), Catch::Contains("'' is not a host name"));
  CHECK_THROWS_WITH(parseHostList("a b:2"), Catch::Contains("'a b:2' is not a host name"));
}

TEST_CASE("hostfiles in the Open MPI and DeepSpeed format", "[launcher][hosts]") {
  const char* text =
      "# two GPU hosts\n"
      "\n"
      "worker-0 slots=8\n"
      "  worker-1   slots=4 max_slots=8   # the small one\n"
      "worker-2\n"
      "worker-0 slots=2\n";
  CHECK(parseHostfile(text, "hosts") == Hosts{{"worker-0", 10}, {"worker-1", 4}, {"worker-2", 1}});
  CHECK(parseHostfile("", "empty").empty());
  CHECK_THROWS_WITH(parseHostfile("a slots=2\nb slots=two\n", "hosts.txt"),
                    Catch::Equals("hosts.txt:2: 'slots=two' is not slots=N (expected 'host slots=N')"));
  CHECK_THROWS_WITH(parseHostfile("a slots=2\n\nb gpus=4\n", "h"), Catch::StartsWith("h:3: 'gpus=4'"));
  CHECK_THROWS_WITH(parseHostfile("a:4 slots=2\n", "h"), Catch::StartsWith("h:1: 'a:4' is not a host name"));
  CHECK_THROWS_WITH(parseHostfile("a slots=0\n", "h"), Catch::StartsWith("h:1: 'slots=0'"));
  CHECK_THROWS_WITH(readHostfile("/nonexistent/hosts"), Catch::Contains("hostfile /nonexistent/hosts cannot be read"));
  CHECK_THROWS_WITH(readHostfile("/dev/null"), Catch::Contains("hostfile /dev/null names no host"));
}

TEST_CASE("Slurm node lists and tasks per node", "[launcher][hosts][slurm]") {
  CHECK(expandSlurmNodelist("node[01-03,07],gpu5") ==
        std::vector<std::string>{"node01", "node02", "node03", "node07", "gpu5"});
  CHECK(expandSlurmNodelist("a,b") == std::vector<std::string>{"a", "b"});
  CHECK(expandSlurmNodelist("rack[1-2]-n[0-1]") ==
        std::vector<std::string>{"rack1-n0", "rack1-n1", "rack2-n0", "rack2-n1"});
  CHECK(expandSlurmNodelist("c[8-10]") == std::vector<std::string>{"c8", "c9", "c10"});
  CHECK_THROWS_WITH(expandSlurmNodelist("n[1-"), Catch::Contains("unclosed '['"));
  CHECK_THROWS_WITH(expandSlurmNodelist("n[3-1]"), Catch::Contains("bad range '3-1'"));
  CHECK(expandSlurmTasksPerNode("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(expandSlurmTasksPerNode("8") == std::vector<int>{8});
  CHECK_THROWS_WITH(expandSlurmTasksPerNode("2(x)"), Catch::Contains("'2(x)' is not N or N(xM)"));
  // Found by fuzz_hostfile: lists that expand to more nodes than any cluster has are refused
  // before they exhaust memory.
  CHECK_THROWS_WITH(expandSlurmNodelist("n[0-999][0-999]"), Catch::Contains("names more than 100000 nodes"));
  CHECK_THROWS_WITH(expandSlurmNodelist("a[0-60000],b[0-60000]"), Catch::Contains("names more than 100000 nodes"));
  CHECK(expandSlurmNodelist("n[0-99][0-99]").size() == 10000);
  CHECK_THROWS_WITH(expandSlurmTasksPerNode("1(x200000)"), Catch::Contains("covers more than 100000 nodes"));

  ddp::Environment inside(std::map<std::string, std::string, std::less<>>{{"SLURM_JOB_NODELIST", "gpu[1-2]"},
                                                                          {"SLURM_TASKS_PER_NODE", "4(x2)"}});
  auto hosts = slurmAllocation(inside);
  REQUIRE(hosts);
  CHECK(*hosts == Hosts{{"gpu1", 4}, {"gpu2", 4}});
  CHECK(totalSlots(*hosts) == 8);
  CHECK_FALSE(slurmAllocation(ddp::Environment{}));
  ddp::Environment mismatched(std::map<std::string, std::string, std::less<>>{{"SLURM_JOB_NODELIST", "gpu[1-3]"},
                                                                              {"SLURM_TASKS_PER_NODE", "4(x2)"}});
  CHECK_THROWS_WITH(slurmAllocation(mismatched),
                    Catch::Contains("3 nodes in SLURM_JOB_NODELIST 'gpu[1-3]' but 2 counts"));
}
