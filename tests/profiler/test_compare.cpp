// The instance decoder, `ddprof compare` on runs with known timings and prices, trace.json and
// the HTML renderers, on constructed runs with known answers.
#include "ddp/common/error.hpp"
#include "ddp/profiler/projection/compare.hpp"
#include "ddp/profiler/render/report.hpp"
#include "ddp/profiler/render/trace.hpp"
#include "support/run_records.hpp"

#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace ddp::profiler;
using ddp::Phase;
using ddp::StepRecord;
using ddp::test::exitOf;

namespace {

// `ranks` ranks on `hosts` hosts (ranks split evenly), `steps` steps of stepMs each, `samples`
// per rank per step, commWaitMs exposed; host k's clock runs skewUs[k] ahead. Each step has two
// bucket allreduces that start on every rank within 0.1 ms of each other (by true time) and end
// together.
RunData makeJob(const std::string& dir, int ranks, int hosts, double stepMs, double commWaitMs, int64_t samples,
                std::vector<double> skewUs = {}, int steps = 20) {
  RunData run;
  run.dir = dir;
  run.worldSize = ranks;
  run.command = {"/usr/bin/train", "--model", "cnn"};
  skewUs.resize(static_cast<size_t>(hosts), 0.0);
  for (int r = 0; r < ranks; ++r) {
    const int host = r * hosts / ranks;
    const std::string name = fmt::format("h{}", host);
    run.hosts.insert(name);
    run.exits.push_back(exitOf(r, 0, std::nullopt, name, false));
    for (int step = 0; step < steps; ++step) {
      StepRecord rec;
      rec.rank = r;
      rec.worldSize = ranks;
      rec.step = step;
      const double trueStart = 1e15 + step * stepMs * 1e3;
      rec.startUnixUs = static_cast<int64_t>(trueStart + skewUs[static_cast<size_t>(host)]);
      rec.samples = samples;
      rec.stepMs = stepMs;
      rec.phasesMs[Phase::kForward] = (stepMs - commWaitMs) / 2;
      rec.phasesMs[Phase::kBackward] = (stepMs - commWaitMs) / 2;
      rec.phasesMs[Phase::kCommWait] = commWaitMs;
      for (int b = 0; b < 2; ++b) {
        const double start = trueStart + (b + 1) * stepMs * 200 + 20.0 * r;  // ranks start 20 us apart
        const double end = trueStart + (b + 1) * stepMs * 200 + 500;         // all end together
        rec.collectives.push_back({ddp::CollectiveOp::kAllreduce, b, 1 << 20,
                                   static_cast<int64_t>(start + skewUs[static_cast<size_t>(host)]),
                                   (end - start) / 1e3});
      }
      run.timings[r].push_back(rec);
    }
  }
  return run;
}

}  // namespace

TEST_CASE("instance names of every shape decode from the vendor's tables", "[profiler][instances]") {
  // -c<R>g1: R is vCPUs per GPU; the size's table gives the counts.
  auto e = decodeInstance("ecs.gn7e-c16g1.32xlarge");
  CHECK(e.family.gpu == "NVIDIA A100");
  CHECK(e.family.gpuMemoryGb == 80);
  CHECK(e.size->vcpus == 128);
  CHECK(e.gpus() == 8);
  CHECK(e.size->memoryGib == 1000);
  CHECK(e.family.linkClass() == "nvlink");
  CHECK(e.family.erdma == false);
  // The table, not the name: 82 vCPUs, 54 with 8 GPUs.
  CHECK(decodeInstance("ecs.gn6v-c10g1.20xlarge").size->vcpus == 82);
  CHECK(decodeInstance("gn5-c8g1.14xlarge").size->vcpus == 54);
  CHECK(decodeInstance("ecs.gn5-c8g1.14xlarge").gpus() == 8);
  // <family>.<size>, -<K>x, bare metal, SCC, -tee, vGPU slices with -vws before or after -mM.
  CHECK(decodeInstance("ecs.gn8v.6xlarge").gpus() == 1);
  CHECK(decodeInstance("ecs.gn8v-2x.12xlarge").size->vcpus == 48);
  CHECK(decodeInstance("ecs.gn8v-2x.12xlarge").gpus() == 2);
  auto x = decodeInstance("ecs.ebmgn7ex.32xlarge");
  CHECK(x.family.bareMetal);
  CHECK(x.family.erdma == true);
  CHECK(x.family.erdmaGbps == 160);
  CHECK(x.gpus() == 8);
  CHECK(decodeInstance("ecs.ebmgn6i.24xlarge").gpus() == 4);
  auto scc = decodeInstance("ecs.sccgn7ex.32xlarge");
  CHECK(scc.family.rdmaKind == "scc-roce");
  CHECK(scc.family.rdmaGbps == 800);
  CHECK(scc.family.linkClass() == "nvswitch");
  CHECK(decodeInstance("ecs.gn8v-tee-8x.16xlarge").family.family == "gn8v-tee");
  auto v = decodeInstance("ecs.vgn6i-m4.xlarge");
  CHECK(v.vgpu());
  CHECK(v.size->gpuShare == "1/4");
  CHECK_FALSE(v.gpus().has_value());
  CHECK(decodeInstance("ecs.vgn6i-m4-vws.xlarge").family.family == "vgn6i-vws");
  CHECK(decodeInstance("ecs.sgn7i-vws-m2s.xlarge").size->memoryGib == 8);
  CHECK(decodeInstance("ECS.GN7I-8X.16XLARGE").gpus() == 8);
  CHECK(decodeInstance("ebmgn9gc.64xlarge").family.gpu.empty());  // not named by the vendor
  CHECK_FALSE(decodeInstance("gn7e").size.has_value());
  auto unknown = decodeInstance("ecs.gn8t.xlarge");  // known only by name
  CHECK(unknown.family.kind == "unpublished");
  CHECK_FALSE(unknown.family.erdma.has_value());
  // Every listed type decodes from its own name to itself.
  for (const auto& i : catalogInstances()) {
    const auto again = decodeInstance(i.name);
    CHECK(again.family.family == i.family.family);
    CHECK(again.sizeKey == i.sizeKey);
  }
  CHECK(toJson(e).at("sources").at("gpu_memory_gb").get<std::string>().find("S1") != std::string::npos);
  CHECK(describe(x) ==
        "ebmgn7ex.32xlarge: 8 x NVIDIA A100 80 GB, NVLink, bare metal, 128 vCPUs, 1024 GiB, 160 Gbit/s, "
        "eRDMA (up to 160 Gbit/s)");
}

// "-" where the note has no figure; "1/4" as a share.
std::string figure(const nlohmann::json& value) {
  if (value.is_null()) return "-";
  return fmt::format("{:g}", value.get<double>());
}

TEST_CASE("every name in the research note decodes to its tables' figures", "[profiler][instances]") {
  std::ifstream in(std::string(DDP_TEST_DATA_DIR) + "/instances/research-note-names.txt");
  REQUIRE(in);
  std::string line;
  int names = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, family, gpus, vcpus, memory, network;
    fields >> name >> family;
    INFO(line);
    ++names;
    if (family == "error") {
      std::string message;
      std::getline(fields >> std::ws, message);
      CHECK_THROWS_WITH(decodeInstance(name), Catch::Contains(message));
      continue;
    }
    fields >> gpus >> vcpus >> memory >> network;
    const auto j = toJson(decodeInstance(name));
    CHECK(j.at("family") == family);
    const std::string share = j.at("gpu_share").is_null() ? "" : j.at("gpu_share").get<std::string>();
    CHECK((share.empty() ? figure(j.at("gpus")) : share) == gpus);
    CHECK(figure(j.at("vcpus")) == vcpus);
    CHECK(figure(j.at("memory_gib")) == memory);
    CHECK(figure(j.at("network_gbps")) == network);
  }
  CHECK(names == 48);
}

TEST_CASE("a wrong instance name says what and the nearest real one", "[profiler][instances]") {
  CHECK_THROWS_WITH(decodeInstance("ecs.gn7q-c16g1.32xlarge"),
                    Catch::Contains("unknown family 'gn7q'") && Catch::Contains("did you mean gn7"));
  CHECK_THROWS_WITH(
      decodeInstance("ecs.gn7e-c16g1.2xlarge"),
      Catch::Contains("gn7e has no type c16g1.2xlarge") && Catch::Contains("did you mean ecs.gn7e-c16g1.4xlarge?"));
  CHECK_THROWS_WITH(decodeInstance("ecs.gn7e-c32g1.32xlarge"),
                    Catch::Contains("did you mean ecs.gn7e-c16g1.32xlarge?"));
  CHECK_THROWS_WITH(decodeInstance("ecs.vgn6i-vws-m4.xlarge"), Catch::Contains("is written ecs.vgn6i-m4-vws.xlarge"));
  CHECK_THROWS_WITH(decodeInstance("ecs.gn7i_c16g1"), Catch::Contains("is not an instance name"));
  CHECK_THROWS_WITH(decodeInstance(""), Catch::Contains("is not an instance name"));
  CHECK_THROWS_WITH(decodeInstance("ecs.gn7i-c16g0.4xlarge"), Catch::Contains("is not an instance name"));
}

TEST_CASE("compare: throughput, efficiency and cost from known timings and prices", "[profiler][compare]") {
  // A: 8 ranks on 1 host, 100 ms steps, 32 samples per rank -> 2560 samples/s.
  // B: 8 ranks on 2 hosts, 125 ms steps, 25 ms exposed      -> 2048 samples/s.
  auto a = makeJob("runs/nvlink", 8, 1, 100, 5, 32);
  auto b = makeJob("runs/eri", 8, 2, 125, 25, 32);
  CompareOptions o;
  o.a.pricePerHour = 40;  // one instance: 40 per hour
  o.b.pricePerHour = 12;  // two instances: 24 per hour
  o.a.instance = decodeInstance("ecs.gn7-c13g1.26xlarge");
  o.datasetSize = 1'000'000;
  auto c = compareRuns(a, b, o);
  CHECK(c.a.samplesPerSecond == Approx(2560));
  CHECK(c.b.samplesPerSecond == Approx(2048));
  CHECK(c.a.instances == 1);
  CHECK(c.b.instances == 2);
  CHECK(c.b.exposedCommShare == Approx(0.2));
  CHECK(c.b.parallelEfficiency == Approx(0.8));
  CHECK(*c.a.costPerHour == Approx(40));
  CHECK(*c.b.costPerHour == Approx(24));
  // cost per 1 M samples = cost per hour / (samples/s * 3600) * 1e6
  CHECK(*c.a.costPerMillionSamples == Approx(40 / (2560.0 * 3600) * 1e6));  // 4.340
  CHECK(*c.b.costPerMillionSamples == Approx(24 / (2048.0 * 3600) * 1e6));  // 3.255
  CHECK(*c.a.epochHours == Approx(1e6 / 2560 / 3600));
  CHECK(*c.b.costPerEpoch == Approx(1e6 / 2048 / 3600 * 24));
  REQUIRE(c.verdict.size() >= 2);
  CHECK_THAT(c.verdict.front(), Catch::StartsWith("nvlink trains 1.25x faster"));
  CHECK_THAT(c.verdict.back(), Catch::StartsWith("eri is 1.33x cheaper per sample") &&
                                   Catch::Contains("3.255 against 4.34 per 1 M samples"));
  auto json = compareJson(c);
  CHECK(json["a"]["instance"]["family"] == "gn7");
  CHECK(json["b"]["cost_per_1m_samples"].get<double>() == Approx(3.2552).epsilon(1e-3));
  CHECK_THAT(renderCompareText(c),
             Catch::Contains("cost per 1 M samples") && Catch::Contains("4.34") && Catch::Contains("2 (h0, h1)"));
  CHECK_THAT(renderCompareMarkdown(c), Catch::Contains("| cost per 1 M samples | 4.34 | 3.255 |"));
  const auto page = renderCompareHtml(c);
  CHECK_THAT(page,
             Catch::Contains("<svg") && Catch::Contains("data-v=\"2560.00\"") && Catch::Contains("data-v=\"3.26\""));
  CHECK(page.find("<script") == std::string::npos);
}

TEST_CASE("compare: different jobs are refused, missing parts are said", "[profiler][compare]") {
  auto a = makeJob("runs/a", 2, 1, 10, 1, 8);
  auto b = makeJob("runs/b", 2, 1, 10, 1, 8);
  b.command = {"/usr/bin/train", "--model", "resnet18"};
  CHECK_THROWS_WITH(compareRuns(a, b, {}), Catch::Contains("different jobs") && Catch::Contains("with --model cnn") &&
                                               Catch::Contains("--model resnet18"));
  b.command = {"/opt/other_prog"};
  CHECK_THROWS_WITH(compareRuns(a, b, {}), Catch::Contains("different jobs") && Catch::Contains("other_prog"));
  RunData empty;
  empty.dir = "runs/empty";
  empty.exits = {exitOf(0, 1, std::nullopt, "h", false)};
  auto c = compareRuns(a, empty, {});
  CHECK_FALSE(c.b.timed);
  CHECK_THAT(renderCompareText(c), Catch::Contains("missing in empty: no step timings"));
  RunData none = empty;
  CHECK_THROWS_WITH(compareRuns(none, empty, {}), Catch::Contains("nothing to compare"));
  CHECK_THROWS_WITH(parsePositive("-2", "--price-a"), Catch::Contains("--price-a -2 must be greater than 0"));
  CHECK_THROWS_WITH(parsePositive("12$", "--price-b"), Catch::Contains("--price-b '12$' is not a number"));
  CHECK_THROWS_WITH(parsePositive("nan", "--price-b"), Catch::Contains("is not a number"));
  CHECK(parsePositive("0.75", "--price-a") == Approx(0.75));
}

TEST_CASE("trace.json: one process per rank, phases inside their steps, clocks aligned", "[profiler][trace]") {
  // Host h1's clock runs 5 s ahead of h0's.
  auto run = makeJob("runs/skewed", 4, 2, 50, 5, 8, {0, 5e6});
  const auto offsets = estimateClockOffsets(run);
  REQUIRE(offsets.count("h1"));
  CHECK(offsets.at("h0") == 0);
  CHECK(offsets.at("h1") == Approx(5e6).margin(100));  // within 0.1 ms of the true 5 s
  const auto trace = nlohmann::json::parse(traceText(run));
  std::set<int> pids;
  std::map<std::pair<int, int64_t>, std::pair<double, double>> steps;
  int phases = 0, buckets = 0;
  for (const auto& e : trace["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e.contains("pid"));
    if (e["ph"] == "M") {
      if (e["name"] == "process_name") pids.insert(e["pid"].get<int>());
      continue;
    }
    REQUIRE(e["ph"] == "X");
    REQUIRE(e["dur"].get<double>() >= 0);
    if (e["cat"] == "step")
      steps[{e["pid"].get<int>(), std::stoll(e["name"].get<std::string>().substr(5))}] = {
          e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()};
  }
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] == "step") continue;
    const auto& span = steps.at({e["pid"].get<int>(), e["args"]["step"].get<int64_t>()});
    CHECK(e["ts"].get<double>() >= span.first - 1e-6);
    CHECK(e["ts"].get<double>() + e["dur"].get<double>() <= span.second + 1e-6);
    phases += e["cat"] == "phase";
    buckets += e["cat"] == "collective";
  }
  CHECK(pids == std::set<int>{0, 1, 2, 3});
  CHECK(steps.size() == 80);
  CHECK(phases == 80 * 3);
  CHECK(buckets == 80 * 2);
  // After correction, rank 3 (on h1) starts step 7 when rank 0 does.
  CHECK(steps.at({3, 7}).first == Approx(steps.at({0, 7}).first).margin(100));
}

TEST_CASE("report.html: self-contained, with the numbers of report.json in its charts", "[profiler][html]") {
  auto run = makeJob("runs/<html & \"quotes\">", 2, 1, 12.5, 2.5, 16);
  auto timing = analyseTimings(run);
  auto findings = diagnose(run, timing);
  Report report{run, timing, findings};
  const auto page = renderReportHtml(report);
  const auto json = reportJson(report);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find("http://") == page.find("http://www.w3.org/2000/svg"));  // the SVG namespace only
  CHECK(page.find("https://") == std::string::npos);
  CHECK_THAT(page, Catch::Contains("runs/&lt;html &amp; &quot;quotes&quot;&gt;"));
  CHECK_THAT(page, Catch::Contains("prefers-color-scheme: dark") && Catch::Contains("@media print"));
  for (const auto& rank : json["ranks"]) {
    for (const auto& [phase, ms] : rank["phases_ms_mean"].items())
      if (ms.get<double>() > 0) CHECK_THAT(page, Catch::Contains(fmt::format("data-v=\"{:.2f}\"", ms.get<double>())));
  }
  CHECK_THAT(page, Catch::Contains(fmt::format("{:.2f}", json["steps"]["step_ms_median"].get<double>())));

  // The transport grid: one cell per edge, coloured by class, named in its tooltip.
  NcclFactsBuilder nccl;
  nccl.addLine("node-00:41000:41007 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read");
  nccl.addLine("node-00:41001:41008 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct");
  run.nccl = nccl.finish();
  const auto withNccl = renderReportHtml(report);
  CHECK_THAT(withNccl, Catch::Contains("Transports between ranks") && Catch::Contains("<title>0 to 1: P2P</title>") &&
                           Catch::Contains("<title>1 to 0: SHM</title>") &&
                           Catch::Contains("<title>0 to 0: -</title>"));
}
