#pragma once
// The process's MPI session: MPI is initialised once, on first use, by whichever backend needs
// it (the mpi backend, and gloo/nccl for their rendezvous), and finalised at exit.

#include <mutex>
#include <string>
#include <vector>

namespace ddp::comm {

// Thread-safe. Every MPI call ddprun makes holds mutex(), so MPI is initialised with
// MPI_THREAD_SERIALIZED (MPI_THREAD_MULTIPLE makes Open MPI lock its progress engine, which
// costs small messages several microseconds).
class MpiSession {
 public:
  // Initialises MPI (MPI_Init_thread) on the first call; throws CommError when it cannot.
  static MpiSession& instance();
  // True once MPI was initialised in this process (by us or by the program).
  static bool active();
  // Ends every rank of the job after an error on this one, so no rank waits forever in a
  // collective; does nothing when MPI is not active or the world has one rank.
  static void abortJob(int code) noexcept;

  std::mutex& mutex() { return mutex_; }
  int worldRank() const { return rank_; }
  int worldSize() const { return size_; }

  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  MpiSession();
  ~MpiSession();

  std::mutex mutex_;
  bool ownsInit_ = false;
  int rank_ = 0;
  int size_ = 1;
};

// Small exchanges over MPI_COMM_WORLD for rendezvous (host records, store address, NCCL id).
// Collective: every rank calls them in the same order.
std::vector<std::string> mpiAllgatherStrings(const std::string& mine);
std::string mpiBroadcastString(const std::string& fromRoot, int root);

}  // namespace ddp::comm
