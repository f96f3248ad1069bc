// The rank contract, the culprit rule, the secret filter and the process runner
// (launcher/include/ddp/launcher/rank.hpp, process.hpp).
#include "ddp/common/error.hpp"
#include "ddp/launcher/process.hpp"
#include "ddp/launcher/rank.hpp"
#include "support/run_records.hpp"

#include <catch2/catch.hpp>

#include <csignal>

using namespace ddp::launcher;
using ddp::ExitStatus;
using ddp::RankExitRecord;
using ddp::signalName;
using Vars = std::map<std::string, std::string, std::less<>>;

TEST_CASE("rank identity from Open MPI, Slurm or torchrun variables", "[launcher][rank]") {
  auto ompi = rankIdentityFrom(ddp::Environment(Vars{{"OMPI_COMM_WORLD_RANK", "5"},
                                                     {"OMPI_COMM_WORLD_SIZE", "8"},
                                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                                                     {"RANK", "0"}}));
  REQUIRE(ompi);
  CHECK(ompi->rank == 5);
  CHECK(ompi->worldSize == 8);
  CHECK(ompi->localRank == 1);
  CHECK(ompi->localWorldSize == 4);
  CHECK_FALSE(ompi->nodeRank);  // Open MPI does not say; ddprun's rendezvous does

  auto slurm = rankIdentityFrom(ddp::Environment(Vars{{"SLURM_PROCID", "6"},
                                                      {"SLURM_NTASKS", "7"},
                                                      {"SLURM_LOCALID", "0"},
                                                      {"SLURM_NODEID", "3"},
                                                      {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}}));
  REQUIRE(slurm);
  CHECK(slurm->rank == 6);
  CHECK(slurm->worldSize == 7);
  CHECK(slurm->localWorldSize == 1);
  CHECK(slurm->nodeRank == 3);

  auto torchrun = rankIdentityFrom(ddp::Environment(Vars{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"NODE_RANK", "1"}}));
  REQUIRE(torchrun);
  CHECK(torchrun->rank == 1);
  CHECK(torchrun->nodeRank == 1);

  CHECK_FALSE(rankIdentityFrom(ddp::Environment()));
  CHECK_THROWS_WITH(rankIdentityFrom(ddp::Environment(Vars{{"OMPI_COMM_WORLD_RANK", "x"}})),
                    Catch::Contains("OMPI_COMM_WORLD_RANK"));
  CHECK_THROWS_WITH(rankIdentityFrom(ddp::Environment(Vars{{"RANK", "4"}, {"WORLD_SIZE", "4"}})),
                    Catch::Contains("not below"));
}

TEST_CASE("the rank environment, with CUDA_VISIBLE_DEVICES by local rank", "[launcher][rank]") {
  RankIdentity id{6, 8, 2, 4, std::nullopt};
  auto host = [](int gpus, bool binding) {
    RankHost h;
    h.nodeRank = 1;
    h.nodes = 2;
    h.gpuCount = gpus;
    h.gpuBinding = binding;
    return h;
  };
  auto env = rankEnvironment(id, host(4, true), ddp::Environment());
  CHECK(env.at("RANK") == "6");
  CHECK(env.at("WORLD_SIZE") == "8");
  CHECK(env.at("LOCAL_RANK") == "2");
  CHECK(env.at("LOCAL_WORLD_SIZE") == "4");
  CHECK(env.at("NODE_RANK") == "1");
  CHECK(env.at("GROUP_RANK") == "1");
  CHECK(env.at("GROUP_WORLD_SIZE") == "2");
  CHECK(env.at("ROLE_RANK") == "6");
  CHECK(env.at("ROLE_WORLD_SIZE") == "8");
  CHECK(env.at("CUDA_VISIBLE_DEVICES") == "2");
  CHECK(rankEnvironment(id, host(2, true), ddp::Environment()).at("CUDA_VISIBLE_DEVICES") == "0");
  // No GPU, binding off, or the user chose: left alone.
  CHECK(rankEnvironment(id, host(0, true), ddp::Environment()).count("CUDA_VISIBLE_DEVICES") == 0);
  CHECK(rankEnvironment(id, host(4, false), ddp::Environment()).count("CUDA_VISIBLE_DEVICES") == 0);
  CHECK(rankEnvironment(id, host(4, true), ddp::Environment(Vars{{"CUDA_VISIBLE_DEVICES", "3,1"}}))
            .count("CUDA_VISIBLE_DEVICES") == 0);
}

TEST_CASE("the rank environment: OMP_NUM_THREADS and torch's error file, never over the user's", "[launcher][rank]") {
  RankIdentity id{1, 4, 1, 4, std::nullopt};  // 4 ranks on this host
  RankHost h;
  h.cpus = 16;
  h.errorFile = "/run/ranks/rank-00001.error.json";
  const ddp::Environment asked(Vars{{"DDPRUN_OMP_THREADS", "auto"}});
  auto env = rankEnvironment(id, h, asked);
  CHECK(env.at("OMP_NUM_THREADS") == "4");  // 16 cores / 4 ranks
  CHECK(env.at("TORCHELASTIC_ERROR_FILE") == "/run/ranks/rank-00001.error.json");
  h.cpus = 2;
  CHECK(rankEnvironment(id, h, asked).at("OMP_NUM_THREADS") == "1");                // at least one
  CHECK(rankEnvironment(id, h, ddp::Environment()).count("OMP_NUM_THREADS") == 0);  // the plan did not ask
  const ddp::Environment users(
      Vars{{"DDPRUN_OMP_THREADS", "auto"}, {"OMP_NUM_THREADS", "8"}, {"TORCHELASTIC_ERROR_FILE", "/mine.json"}});
  env = rankEnvironment(id, h, users);
  CHECK(env.count("OMP_NUM_THREADS") == 0);  // inherited as the user set it
  CHECK(env.count("TORCHELASTIC_ERROR_FILE") == 0);
}

TEST_CASE("output modes", "[launcher][rank]") {
  CHECK(parseOutputMode("tag", "x").shows(3));
  auto one = parseOutputMode("rank:2", "x");
  CHECK(one.shows(2));
  CHECK_FALSE(one.shows(0));
  CHECK_FALSE(parseOutputMode("quiet", "x").shows(0));
  for (const char* bad : {"rank", "rank:-1", "rank:a", "loud"})
    CHECK_THROWS_AS(parseOutputMode(bad, "--output"), ddp::ConfigError);
}

TEST_CASE("the culprit: the earliest to fail on its own", "[launcher][rank]") {
  const auto record = ddp::test::endedAt;
  std::vector<RankExitRecord> records{record(0, std::nullopt, SIGTERM, 900, true),  // stopped: collateral
                                      record(1, 0, std::nullopt, 100, false),
                                      record(2, 7, std::nullopt, 500, false),   // the first failure
                                      record(3, 1, std::nullopt, 600, false)};  // failed later on its own
  CHECK(findCulprit(records) == 2);
  records[3].endUnixUs = 500;  // a tie goes to the lower rank
  records[2].rank = 4;
  CHECK(findCulprit(records) == 3);
  CHECK_FALSE(findCulprit({record(0, 0, std::nullopt, 1, false), record(1, std::nullopt, SIGTERM, 2, true)}));
}

TEST_CASE("nothing that looks like a secret is kept", "[launcher][rank]") {
  for (const char* name : {"HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "db_password", "GITHUB_AUTH", "MY_PRIVATE_THING",
                           "DDPRUN_CONTROL_TOKEN", "OPENAI_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"})
    CHECK(looksSecret(name));
  for (const char* name : {"PATH", "HOME", "NCCL_DEBUG", "MASTER_PORT", "CUDA_VISIBLE_DEVICES"})
    CHECK_FALSE(looksSecret(name));
  auto kept = withoutSecrets(Vars{{"PATH", "/bin"}, {"HF_TOKEN", "hf_x"}});
  CHECK(kept.size() == 1);
  CHECK(kept.count("PATH") == 1);
}

TEST_CASE("exit statuses as a shell reports them", "[launcher][process]") {
  ExitStatus code{7, std::nullopt, 0};
  CHECK(code.shellCode() == 7);
  CHECK(code.describe() == "exit code 7");
  ExitStatus sig{std::nullopt, SIGSEGV, 0};
  CHECK(sig.shellCode() == 139);
  CHECK(sig.describe() == "killed by SIGSEGV");
  CHECK(signalName(SIGKILL) == "SIGKILL");
}

TEST_CASE("the process runner: argv without a shell, PATH lookup, exec errors", "[launcher][process]") {
  auto echo = runCapture({"printf", "%s|", "a b", "$HOME", "'q'", ";x"}, 10);
  CHECK(echo.output == "a b|$HOME|'q'|;x|");
  CHECK_FALSE(echo.status.failed());
  auto env = runCapture({"sh", "-c", "echo $DDP_TEST_VAR"}, 10, {{"DDP_TEST_VAR", "v 1"}});
  CHECK(env.output == "v 1\n");
  auto killed = runCapture({"sh", "-c", "kill -SEGV $$"}, 10);
  CHECK(killed.status.signal == SIGSEGV);
  auto slow = runCapture({"sleep", "10"}, 0.2);
  CHECK(slow.timedOut);
  CHECK_THROWS_WITH(runCapture({"no-such-program-ddp"}, 1), Catch::Contains("not found on PATH"));
  CHECK_THROWS_WITH(resolveExecutable("/etc/passwd", ddp::Environment()), Catch::Contains("not executable"));
  CHECK_THROWS_WITH(resolveExecutable("/", ddp::Environment()), Catch::Contains("is a directory"));
}
