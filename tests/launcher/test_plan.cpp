// makeLaunchPlan: hosts from every source, root and non-root, oversubscription, the rank
// environment, profiling, exports and quoting — without spawning anything.
#include "ddp/common/error.hpp"
#include "ddp/launcher/plan.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace ddp::launcher;

namespace {

PlanContext context(std::map<std::string, std::string, std::less<>> vars = {}) {
  PlanContext c;
  c.environment = ddp::Environment(std::move(vars));
  c.localSlots = 2;
  c.localHost = "box";
  c.cwd = "/work";
  c.timestamp = "20261129-224501";
  c.masterPort = 29517;
  c.worker = {"/usr/bin/ddprun", "worker"};
  return c;
}

LaunchOptions options(std::vector<std::string> program = {"./train", "--steps", "5"}) {
  LaunchOptions o;
  o.program = std::move(program);
  return o;
}

bool contains(const std::vector<std::string>& argv, const std::vector<std::string>& run) {
  return std::search(argv.begin(), argv.end(), run.begin(), run.end()) != argv.end();
}

}  // namespace

TEST_CASE("a local run: every core, loopback rendezvous, default run directory", "[launcher][plan]") {
  auto plan = makeLaunchPlan(options(), context());
  CHECK(plan.np == 2);
  CHECK(plan.localOnly);
  CHECK(plan.masterAddr == "127.0.0.1");
  CHECK(plan.runDir == "/work/ddprun-runs/20261129-224501-train");
  CHECK(plan.rankEnv.at("MASTER_PORT") == "29517");
  CHECK(plan.rankEnv.at("DDPRUN_RUN_DIR") == plan.runDir);
  CHECK(plan.mpirunEnv.count("OMPI_ALLOW_RUN_AS_ROOT") == 0);                  // not root
  CHECK(plan.mpirunEnv.at("OMPI_MCA_orte_allowed_exit_without_sync") == "1");  // ddprun tears down, not mpirun
  CHECK(plan.warnings.empty());
  CHECK(contains(plan.argv, {"mpirun", "-np", "2", "--host", "box:2"}));
  CHECK(contains(plan.argv, {"--bind-to", "none"}));
  CHECK(contains(plan.argv, {"-x", "MASTER_ADDR"}));
  CHECK(contains(plan.argv, {"/usr/bin/ddprun", "worker", "--", "./train", "--steps", "5"}));
  CHECK(std::find(plan.argv.begin(), plan.argv.end(), "--oversubscribe") == plan.argv.end());
}

TEST_CASE("mpirun loads no hwloc plugin for displays, OpenCL or libxml2, unless the user chose", "[launcher][plan]") {
  CHECK(makeLaunchPlan(options(), context()).mpirunEnv.at("HWLOC_PLUGINS_BLACKLIST") ==
        "hwloc_gl,hwloc_opencl,hwloc_xml_libxml");
  for (const char* chosen : {"", "hwloc_pci"})  // empty: every plugin
    CHECK(makeLaunchPlan(options(), context({{"HWLOC_PLUGINS_BLACKLIST", chosen}}))
              .mpirunEnv.count("HWLOC_PLUGINS_BLACKLIST") == 0);
}

TEST_CASE("ranks keep freed memory for reuse, unless the user tuned malloc", "[launcher][plan]") {
  const auto plain = makeLaunchPlan(options(), context()).rankEnv;
  CHECK(plain.at("MALLOC_MMAP_THRESHOLD_") == "33554432");
  CHECK(plain.at("MALLOC_TRIM_THRESHOLD_") == "268435456");
  for (const char* chosen : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"}) {
    const auto theirs = makeLaunchPlan(options(), context({{chosen, "131072"}})).rankEnv;
    CHECK(theirs.count("MALLOC_MMAP_THRESHOLD_") == 0);
    CHECK(theirs.count("MALLOC_TRIM_THRESHOLD_") == 0);
  }
  auto o = options();
  o.exports = {"MALLOC_TRIM_THRESHOLD_=0"};
  CHECK(makeLaunchPlan(o, context()).rankEnv.at("MALLOC_TRIM_THRESHOLD_") == "0");
  CHECK(makeLaunchPlan(o, context()).rankEnv.count("MALLOC_MMAP_THRESHOLD_") == 0);
}

TEST_CASE("as root: the allow-run-as-root settings for mpirun", "[launcher][plan]") {
  auto c = context();
  c.root = true;
  auto plan = makeLaunchPlan(options(), c);
  CHECK(plan.mpirunEnv.at("OMPI_ALLOW_RUN_AS_ROOT") == "1");
  CHECK(plan.mpirunEnv.at("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM") == "1");
}

TEST_CASE("more ranks than local cores are oversubscribed with a warning, on given hosts an error",
          "[launcher][plan]") {
  auto o = options();
  o.np = 4;
  auto plan = makeLaunchPlan(o, context());
  CHECK(std::find(plan.argv.begin(), plan.argv.end(), "--oversubscribe") != plan.argv.end());
  REQUIRE(plan.warnings.size() == 1);
  CHECK_THAT(plan.warnings[0], Catch::Contains("more than the 2 cores"));
  o.hostList = "a:2,b:1";
  CHECK_THROWS_WITH(
      makeLaunchPlan(o, context()),
      Catch::Equals("-np 4 but the hosts have 3 slots (a:2,b:1): add hosts or slots, or pass --oversubscribe"));
  o.oversubscribe = true;
  CHECK(makeLaunchPlan(o, context()).np == 4);
  o.np = 0;
  CHECK_THROWS_WITH(makeLaunchPlan(o, context()), Catch::Equals("-np 0: at least one rank is needed"));
}

TEST_CASE("hosts from -H, a hostfile, Slurm, and --nproc-per-node", "[launcher][plan]") {
  auto o = options();
  o.hostList = "gpu-a:8,gpu-b:8";
  auto plan = makeLaunchPlan(o, context());
  CHECK(plan.np == 16);
  CHECK(plan.masterAddr == "gpu-a");
  CHECK(contains(plan.argv, {"--host", "gpu-a:8,gpu-b:8"}));

  o.hostList.clear();
  o.hostfile = "hosts.txt";
  auto c = context();
  c.hostfileText = "# cluster\nn1 slots=4\nn2 slots=4\n";
  CHECK(makeLaunchPlan(o, c).hosts == std::vector<HostSlots>{{"n1", 4}, {"n2", 4}});
  c.hostfileText = "n1 slots=4\nn2 slots=four\n";
  CHECK_THROWS_WITH(makeLaunchPlan(o, c), Catch::StartsWith("hosts.txt:2: 'slots=four'"));
  o.hostList = "a";
  CHECK_THROWS_WITH(makeLaunchPlan(o, c), Catch::Equals("give -H or --hostfile, not both"));

  auto slurm = options();
  auto inside = context({{"SLURM_JOB_NODELIST", "node[1-2]"}, {"SLURM_TASKS_PER_NODE", "4(x2)"}});
  auto fromSlurm = makeLaunchPlan(slurm, inside);
  CHECK(fromSlurm.np == 8);
  CHECK(contains(fromSlurm.argv, {"--host", "node1:4,node2:4"}));
  slurm.nprocPerNode = 2;
  auto perNode = makeLaunchPlan(slurm, inside);
  CHECK(perNode.np == 4);
  CHECK(contains(perNode.argv, {"--host", "node1:2,node2:2"}));
}

TEST_CASE("profiling captures NCCL logs into the run directory unless the user chose", "[launcher][plan]") {
  auto o = options();
  o.profile = true;
  o.runDir = "runs/a";
  auto plan = makeLaunchPlan(o, context());
  CHECK(plan.runDir == "/work/runs/a");
  CHECK(plan.rankEnv.at("NCCL_DEBUG") == "INFO");
  CHECK(plan.rankEnv.at("NCCL_DEBUG_SUBSYS") == "INIT,ENV,NET,GRAPH,COLL");
  CHECK(plan.rankEnv.at("NCCL_DEBUG_FILE") == "/work/runs/a/nccl/%h.%p.log");
  auto userSet = makeLaunchPlan(o, context({{"NCCL_DEBUG_SUBSYS", "ALL"}}));
  CHECK(userSet.rankEnv.count("NCCL_DEBUG_SUBSYS") == 0);  // theirs reaches the ranks as is
  o.ncclDebug = "WARN";
  o.ncclSubsys = "NET";
  auto chosen = makeLaunchPlan(o, context());
  CHECK(chosen.rankEnv.at("NCCL_DEBUG") == "WARN");
  CHECK(chosen.rankEnv.at("NCCL_DEBUG_SUBSYS") == "NET");
  CHECK(makeLaunchPlan(options(), context()).rankEnv.count("NCCL_DEBUG") == 0);
}

TEST_CASE("exports and --mpi-args", "[launcher][plan]") {
  auto o = options();
  o.exports = {"OMP_NUM_THREADS=4", "HOME"};
  o.mpiArgs = "--mca btl self,tcp --map-by 'ppr:1:node'";
  auto plan = makeLaunchPlan(o, context({{"HOME", "/root"}}));
  CHECK(plan.rankEnv.at("OMP_NUM_THREADS") == "4");
  CHECK(plan.rankEnv.at("HOME") == "/root");
  CHECK(contains(plan.argv, {"--mca", "btl", "self,tcp", "--map-by", "ppr:1:node", "/usr/bin/ddprun"}));
  o.exports = {"NOPE"};
  CHECK_THROWS_WITH(makeLaunchPlan(o, context()), Catch::Contains("-x NOPE: NOPE is not set"));
  o.exports = {"1BAD=x"};
  CHECK_THROWS_WITH(makeLaunchPlan(o, context()), Catch::Contains("'1BAD' is not a variable name"));
  o.exports.clear();
  o.mpiArgs = "--mca 'btl";
  CHECK_THROWS_WITH(makeLaunchPlan(o, context()), Catch::Contains("unbalanced single quote"));
  CHECK_THROWS_WITH(makeLaunchPlan(options({}), context()), Catch::Contains("no program to run"));
}

TEST_CASE("quoting: arguments with spaces, quotes, semicolons and dollars survive the printed plan",
          "[launcher][plan]") {
  CHECK(shellQuote("plain-word_1.0,a=b:c/d") == "plain-word_1.0,a=b:c/d");
  CHECK(shellQuote("") == "''");
  CHECK(shellQuote("two words") == "'two words'");
  CHECK(shellQuote("it's") == "'it'\\''s'");
  CHECK(shellQuote("$HOME;rm") == "'$HOME;rm'");
  const std::vector<std::string> tricky = {"sh", "-c", "echo \"$RANK\"; echo 'x y'", "a\\b", ""};
  auto plan = makeLaunchPlan(options(tricky), context());
  // The argv keeps them verbatim; the rendering, split back like a shell, gives the same words.
  CHECK(contains(plan.argv, tricky));
  auto rendered = renderPlan(plan);
  auto lastLine = rendered.substr(rendered.rfind('\n', rendered.size() - 2) + 1);
  auto words = splitShellWords(lastLine, "plan");
  CHECK(contains(words, tricky));
}

TEST_CASE("the control connection and the worker settings travel in the rank environment", "[launcher][plan]") {
  auto ctx = context();
  auto plain = makeLaunchPlan(options(), ctx);
  CHECK(plain.rankEnv.count("DDPRUN_CONTROL") == 0);  // --dry-run: workers run on their own
  CHECK(plain.rankEnv.at("DDPRUN_OUTPUT") == "tag");
  CHECK(plain.rankEnv.at("DDPRUN_GRACE_S") == "5");
  CHECK(plain.rankEnv.at("DDPRUN_GPU_BINDING") == "local-rank");

  ctx.controlPort = 40001;
  ctx.controlToken = "abc";
  auto o = options();
  o.output = "rank:3";
  o.graceSeconds = 10;
  o.gpuBinding = false;
  auto local = makeLaunchPlan(o, ctx);
  CHECK(local.rankEnv.at("DDPRUN_CONTROL") == "127.0.0.1:40001");
  CHECK(local.rankEnv.at("DDPRUN_CONTROL_TOKEN") == "abc");
  CHECK(local.rankEnv.at("DDPRUN_OUTPUT") == "rank:3");
  CHECK(local.rankEnv.at("DDPRUN_GRACE_S") == "10");
  CHECK(local.rankEnv.at("DDPRUN_GPU_BINDING") == "none");
  CHECK(contains(local.argv, {"-x", "DDPRUN_CONTROL"}));

  auto remote = options();
  remote.hostList = "a:2,b:2";
  CHECK(makeLaunchPlan(remote, ctx).rankEnv.at("DDPRUN_CONTROL") == "box:40001");

  auto bad = options();
  bad.output = "rank:";
  CHECK_THROWS_WITH(makeLaunchPlan(bad, ctx), Catch::Contains("--output 'rank:'"));
  bad = options();
  bad.graceSeconds = -1;
  CHECK_THROWS_WITH(makeLaunchPlan(bad, ctx), Catch::Contains("--grace"));
}

TEST_CASE("srun as the launcher: one job step in the allocation, or what it needs", "[launcher][plan]") {
  auto o = options();
  o.launcher = "srun";
  auto inside = context({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}});
  inside.srun = "/usr/bin/srun";
  const auto plan = makeLaunchPlan(o, inside);
  CHECK(plan.launcher == "srun");
  CHECK(plan.np == 4);
  CHECK(plan.masterAddr == "n1");
  CHECK(plan.argv == std::vector<std::string>{"/usr/bin/srun", "--mpi=pmix", "--ntasks=4", "--cpu-bind=none",
                                              "--kill-on-bad-exit=0", "--export=ALL", "/usr/bin/ddprun", "worker", "--",
                                              "./train", "--steps", "5"});
  o.np = 2;
  CHECK(contains(makeLaunchPlan(o, inside).argv, {"--ntasks=2"}));
  o.np = 6;
  CHECK_THROWS_WITH(makeLaunchPlan(o, inside), Catch::StartsWith("-np 6 but the hosts have 4 slots (n1:2,n2:2)"));
  o.np.reset();
  CHECK_THROWS_WITH(makeLaunchPlan(o, context({{"SLURM_JOB_ID", "7"}})),
                    Catch::Contains("--launcher srun starts the ranks in a Slurm allocation, and there is none here "
                                    "(SLURM_JOB_ID is set but no node list)"));
  CHECK_THROWS_WITH(makeLaunchPlan(o, context()), Catch::Contains("(SLURM_JOB_ID is not set): run it under salloc"));
  o.hostList = "a:2";
  CHECK_THROWS_WITH(makeLaunchPlan(o, inside), Catch::StartsWith("--launcher srun places the ranks on the Slurm "
                                                                 "allocation's nodes: drop -H"));
  o.hostList.clear();
  o.launcher = "pbs";
  CHECK_THROWS_WITH(makeLaunchPlan(o, inside), Catch::Equals("--launcher pbs: mpirun or srun"));
  o.launcher = "mpirun";
  CHECK(makeLaunchPlan(o, inside).argv.front() == "mpirun");
}

TEST_CASE("ranksByHost: the hosts' slots filled in order", "[launcher][plan]") {
  auto o = options();
  o.hostList = "a:2,b:3,c:1";
  o.np = 4;
  const auto byHost = ranksByHost(makeLaunchPlan(o, context()));
  REQUIRE(byHost.size() == 3);
  CHECK(byHost[0] == std::pair<std::string, std::vector<int>>{"a", {0, 1}});
  CHECK(byHost[1] == std::pair<std::string, std::vector<int>>{"b", {2, 3}});
  CHECK(byHost[2].second.empty());
}

TEST_CASE("a host lost in an earlier attempt is left out (--min-np)", "[launcher][plan]") {
  auto o = options();
  o.hostList = "a:2,b:2,c:2";
  o.excludedHosts = {"b"};
  o.np = 4;
  const auto plan = makeLaunchPlan(o, context());
  CHECK(plan.hosts == std::vector<HostSlots>{{"a", 2}, {"c", 2}});
  CHECK(contains(plan.argv, {"-np", "4", "--host", "a:2,c:2"}));
  o.excludedHosts = {"a"};  // the first host held the rendezvous: the next one does now
  CHECK(makeLaunchPlan(o, context()).masterAddr == "b");
  o.excludedHosts = {"a", "b", "c"};
  CHECK_THROWS_WITH(makeLaunchPlan(o, context()), Catch::Equals("every host was lost"));

  auto s = options();
  s.launcher = "srun";
  s.excludedHosts = {"n2"};
  s.np = 2;
  auto inside = context({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "n[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x3)"}});
  const auto step = makeLaunchPlan(s, inside);
  CHECK(contains(step.argv, {"--ntasks=2"}));
  // srun would otherwise ask for every node, and wait for the CPUs the lost node's step holds
  CHECK(contains(step.argv, {"--exclude=n2", "--nodes=2", "--overlap"}));
  s.launcher = "mpirun";
  CHECK(makeLaunchPlan(s, inside).mpirunEnv.at("OMPI_MCA_plm_slurm_args") == "--overlap");
}
