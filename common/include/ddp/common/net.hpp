#pragma once
// Network interfaces and the choice of the one a rank uses to reach rank 0 (docs/comm.md,
// "Choosing the network interface"). MPI- and LibTorch-free: the comm backends and the launcher (ddprun doctor) use it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp::net {

struct NetInterface {
  std::string name;      // e.g. eth0
  std::string address;   // dotted IPv4
  uint32_t addr = 0;     // host byte order
  uint32_t netmask = 0;  // host byte order
  bool loopback = false;
};

// The IPv4 interfaces of this network namespace that are up.
std::vector<NetInterface> listInterfaces();

// The interface named `name`; throws ConfigError listing the interfaces when there is none.
NetInterface findInterface(const std::vector<NetInterface>& interfaces, const std::string& name);

// The local interface whose subnet holds `address` (dotted IPv4, or a host name resolved to its
// first IPv4 address), else the one the kernel routes it through; throws ConfigError when
// `address` does not resolve or no interface reaches it.
NetInterface interfaceReaching(const std::vector<NetInterface>& interfaces, const std::string& address);

// What one rank tells the others about its host: the host identity (hostname + non-loopback
// addresses; hostnames alone are equal across network namespaces) and its interfaces.
struct HostRecord {
  std::string identity;
  std::vector<NetInterface> interfaces;
};

HostRecord localHostRecord();

// The address rank 0 serves the rendezvous on, given every rank's record (index = rank):
// loopback when all ranks share one host, else rank 0's non-loopback address whose subnet
// holds the most other hosts' addresses. Throws ConfigError when ranks span hosts and rank 0
// has no non-loopback interface.
std::string chooseRendezvousAddress(const std::vector<HostRecord>& records);

// Serialisation of a HostRecord for an MPI exchange (one line per interface).
std::string encodeHostRecord(const HostRecord& record);
HostRecord decodeHostRecord(const std::string& text);

}  // namespace ddp::net
