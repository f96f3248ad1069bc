#include "ddp/comm/registry.hpp"
#include "ddp/common/error.hpp"
#include "ddp/common/net.hpp"
#include "ddp/config.hpp"

#include <catch2/catch.hpp>

using namespace ddp::comm;
using namespace ddp::net;
using Catch::Matchers::Contains;

TEST_CASE("the registry lists the backends of this build", "[comm][registry]") {
  const auto& registry = builtinBackends();
  CHECK(registry.contains("mpi"));
  CHECK(registry.contains("gloo") == static_cast<bool>(DDP_HAVE_GLOO));
  CHECK(registry.contains("nccl") == static_cast<bool>(DDP_HAVE_NCCL));
  CHECK_THROWS_WITH(registry.create("nvshmem", WorldInfo{}), Contains("unknown backend 'nvshmem' (known: "));
  CHECK_THROWS_AS(registry.create("nvshmem", WorldInfo{}), ddp::ConfigError);
}

TEST_CASE("a backend name registers once", "[comm][registry]") {
  BackendRegistry registry;
  registry.add("x", [](const WorldInfo&, const BackendOptions&) { return std::unique_ptr<Backend>(); });
  CHECK(registry.names() == std::vector<std::string>{"x"});
  CHECK_THROWS_AS(registry.add("x", nullptr), ddp::Error);
}

namespace {
NetInterface iface(std::string name, std::string address, uint32_t addr, uint32_t mask, bool loopback = false) {
  return NetInterface{std::move(name), std::move(address), addr, mask, loopback};
}
}  // namespace

TEST_CASE("interfaces of this namespace include loopback", "[comm][net]") {
  const auto interfaces = listInterfaces();
  const auto lo = interfaceReaching(interfaces, "127.0.0.1");
  CHECK(lo.loopback);
  CHECK(findInterface(interfaces, lo.name).address == lo.address);
  CHECK_THROWS_WITH(findInterface(interfaces, "nosuch0"), Contains("'nosuch0' has no IPv4 address"));
  CHECK(interfaceReaching(interfaces, "localhost").loopback);
  CHECK_THROWS_WITH(interfaceReaching(interfaces, "no-such-host.invalid"), Contains("nor a host name that resolves"));
}

TEST_CASE("rank 0's rendezvous address", "[comm][net]") {
  const auto lo = iface("lo", "127.0.0.1", 0x7f000001, 0xff000000, true);
  const HostRecord a{
      "h,10.1.0.1,172.17.0.1",
      {lo, iface("eth0", "10.1.0.1", 0x0a010001, 0xffffff00), iface("docker0", "172.17.0.1", 0xac110001, 0xffff0000)}};
  const HostRecord b{"h,10.1.0.2", {lo, iface("eth0", "10.1.0.2", 0x0a010002, 0xffffff00)}};
  CHECK(chooseRendezvousAddress({a, a}) == "127.0.0.1");
  CHECK(chooseRendezvousAddress({a, b, b}) == "10.1.0.1");  // the subnet the other host shares
  const HostRecord lonely{"h", {lo}};
  CHECK_THROWS_WITH(chooseRendezvousAddress({lonely, b}), Contains("no non-loopback"));
  const auto decoded = decodeHostRecord(encodeHostRecord(a));
  CHECK(decoded.identity == a.identity);
  REQUIRE(decoded.interfaces.size() == 3);
  CHECK(decoded.interfaces[1].name == "eth0");
  CHECK(decoded.interfaces[1].netmask == 0xffffff00);
  CHECK(decoded.interfaces[0].loopback);
}

TEST_CASE("backend options from the environment", "[comm][registry]") {
  const auto options = BackendOptions::fromEnvironment(
      ddp::Environment({{"DDP_GLOO_IFNAME", "eth1"}, {"DDP_MPI_SHM_RANKS_PER_HOST", "2"}}));
  CHECK(options.interface == "eth1");
  CHECK(options.shmRanksPerHost == 2);
  CHECK(BackendOptions::fromEnvironment(ddp::Environment()).interface.empty());
  CHECK_THROWS_WITH(
      BackendOptions::fromEnvironment(ddp::Environment({{"DDP_MPI_SHM_RANKS_PER_HOST", "two"}, {"HOME", "/root"}})),
      Contains("DDP_MPI_SHM_RANKS_PER_HOST='two' is not an integer"));
}
