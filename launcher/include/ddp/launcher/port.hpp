#pragma once
// MASTER_PORT for rank 0's rendezvous: a free TCP port, held by a lock file
// (/tmp/ddprun-port-N.lock, flock) for as long as the reservation lives, so that two ddprun
// runs on one host never pick the same one. The lock file is removed when the reservation ends.

#include <string>
#include <utility>

namespace ddp::launcher {

// Where a chosen MASTER_PORT is drawn from: the 10,000 ports below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range, "32768\t60999"), none under 1024. A port of that range, free when
// ddprun looks, can become the source port of any outgoing connection on the host (a worker's to
// ddprun, Slurm's, MPI's) before rank 0 binds it. {0, 0} when the text is not a range or leaves
// fewer than 1,000 ports below it.
std::pair<int, int> masterPortBand(const std::string& ephemeralRange);

class PortReservation {
 public:
  // A free port of masterPortBand (64 tries), else one the kernel chooses (64 tries); Error when
  // none could be locked.
  PortReservation();
  // The port the user chose (--master-port): ConfigError when it is in use or another ddprun
  // holds it.
  explicit PortReservation(int wanted);
  ~PortReservation();
  PortReservation(PortReservation&& other) noexcept;
  PortReservation& operator=(PortReservation&& other) noexcept;
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;

  int port() const { return port_; }

 private:
  int fd_ = -1, port_ = 0;
};

}  // namespace ddp::launcher
