#include "ddp/comm/mpi_session.hpp"

#include "ddp/comm/mpi_error.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <cstring>

#include <mutex>

namespace ddp::comm {

MpiSession& MpiSession::instance() {
  static MpiSession session;
  return session;
}

bool MpiSession::active() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

void MpiSession::abortJob(int code) noexcept {
  if (!active()) return;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

MpiSession::MpiSession() {
  int initialized = 0;
  DDP_CHECK_MPI(MPI_Initialized(&initialized));
  if (initialized == 0) {
    int provided = 0;
    DDP_CHECK_MPI(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    ownsInit_ = true;
    if (provided < MPI_THREAD_SERIALIZED) {
      throw CommError("MPI does not provide MPI_THREAD_SERIALIZED");
    }
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  DDP_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  DDP_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size_));
}

std::vector<std::string> mpiAllgatherStrings(const std::string& mine) {
  auto& session = MpiSession::instance();
  std::lock_guard<std::mutex> lock(session.mutex());
  const int n = session.worldSize();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<size_t>(n));
  DDP_CHECK_MPI(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD));
  std::vector<int> offsets(static_cast<size_t>(n), 0);
  for (size_t r = 1; r < offsets.size(); ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::string all(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
  DDP_CHECK_MPI(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                               MPI_COMM_WORLD));
  std::vector<std::string> result;
  for (size_t r = 0; r < offsets.size(); ++r) {
    result.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
  }
  return result;
}

std::string mpiBroadcastString(const std::string& fromRoot, int root) {
  auto& session = MpiSession::instance();
  std::lock_guard<std::mutex> lock(session.mutex());
  int length = static_cast<int>(fromRoot.size());
  DDP_CHECK_MPI(MPI_Bcast(&length, 1, MPI_INT, root, MPI_COMM_WORLD));
  std::string text = session.worldRank() == root ? fromRoot : std::string(static_cast<size_t>(length), '\0');
  DDP_CHECK_MPI(MPI_Bcast(text.data(), length, MPI_CHAR, root, MPI_COMM_WORLD));
  return text;
}

MpiSession::~MpiSession() {
  if (ownsInit_ && active()) MPI_Finalize();
}

}  // namespace ddp::comm

// Here, not in error.cpp, so that programs which only use errors (ddprun) need no libmpi.
namespace ddp {
namespace detail {

void throwMpiError(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    std::strncpy(text, "unknown MPI error", sizeof(text) - 1);
  }
  const char* base = std::strrchr(file, '/');
  throw CommError(fmt::format("{}:{}: {} failed: {}", base != nullptr ? base + 1 : file, line, call, text));
}

}  // namespace detail
}  // namespace ddp
