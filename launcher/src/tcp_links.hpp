#pragma once
// The TCP connections a rank sends its gradients over, as the kernel counts them (sock_diag's
// tcp_info): per connection the bytes the peer acknowledged and the time the connection was busy
// sending, less the time the receiver's window held it back — what the link itself delivered.
// The utilisation sampler turns them into each rank's link samples (docs/launcher.md,
// "Utilisation"); NCCL over RDMA (IB, eRDMA) sends nothing over TCP and has none.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ddp::launcher::tcp {

struct Connection {
  std::string local, peer;  // addresses, without ports: "10.213.0.1", "fd00::2"
  uint64_t bytesAcked = 0;  // tcpi_bytes_acked
  uint64_t sendingUs = 0;   // tcpi_busy_time - tcpi_rwnd_limited
};

// The socket inodes among the open files of these processes (/proc/PID/fd -> "socket:[N]").
std::set<uint64_t> socketInodes(const std::vector<int>& pids);

// The established TCP connections (IPv4 and IPv6) of this network namespace whose inode is in
// `inodes`, by inode; those to a loopback address or to the host's own address left out (they
// never cross a link). Empty where the kernel has no sock_diag.
std::map<uint64_t, Connection> connections(const std::set<uint64_t>& inodes);

}  // namespace ddp::launcher::tcp
