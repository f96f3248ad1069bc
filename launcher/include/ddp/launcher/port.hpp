#pragma once
// MASTER_PORT for rank 0's rendezvous: a free TCP port, held by a lock file
// (/tmp/ddprun-port-N.lock, flock) for as long as the reservation lives, so that two ddprun
// runs on one host never pick the same one. The lock file is removed when the reservation ends.

namespace ddp::launcher {

class PortReservation {
 public:
  // A free port, chosen by the kernel (64 tries); Error when none could be locked.
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
