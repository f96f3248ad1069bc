// gen_nccl_log BYTES RANKS [coll|edges] > file: a synthetic NCCL_DEBUG=INFO log of about BYTES
// bytes from RANKS ranks (8 per host): each rank's init lines (version, bootstrap, NET/IB, env,
// ring and channel edges over P2P/SHM/NET, Init COMPLETE, timings), then
// - coll (the default, NCCL_DEBUG_SUBSYS=INIT,COLL): per-collective COLL lines interleaved across
//   ranks, with an occasional WARN and a non-NCCL application line;
// - edges: communicator after communicator set up (as a job that splits many process groups, or
//   a large job's init with many channels): each rank's connection lines over 32 channels, in
//   the shapes of P2P/CUMEM/read, SHM/direct/direct and [send]/[receive] via NET/IB/k/GDRDMA.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  const std::string mix = argc == 4 ? argv[3] : "coll";
  if ((argc != 3 && argc != 4) || (mix != "coll" && mix != "edges")) {
    std::fprintf(stderr, "usage: gen_nccl_log BYTES RANKS [coll|edges]\n");
    return 2;
  }
  const uint64_t target = std::strtoull(argv[1], nullptr, 10);
  const int ranks = std::atoi(argv[2]);
  static char buffer[1 << 20];
  std::setvbuf(stdout, buffer, _IOFBF, sizeof buffer);
  uint64_t written = 0;
  auto emit = [&](const char* fmt, auto... args) {
    int n = std::printf(fmt, args...);
    written += static_cast<uint64_t>(n);
  };
  auto host = [](int rank) { return rank / 8; };
  auto pid = [](int rank) { return 41000 + rank; };
  for (int r = 0; r < ranks; ++r) {
    const int h = host(r), p = pid(r), d = r % 8;
    if (r == 0) emit("node-%02d:%d:%d [%d] NCCL INFO NCCL version 2.21.5+cuda12.4\n", h, p, p, d);
    emit("node-%02d:%d:%d [%d] NCCL INFO Bootstrap : Using eth0:10.0.%d.%d<0>\n", h, p, p, d, h, 10 + d);
    emit("node-%02d:%d:%d [%d] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.%d.%d<0>\n", h, p,
         p, d, h, 10 + d);
    emit("node-%02d:%d:%d [%d] NCCL INFO Using network IB\n", h, p, p, d);
    emit("node-%02d:%d:%d [%d] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_1\n", h, p, p, d);
    emit(
        "node-%02d:%d:%d [%d] NCCL INFO comm 0x55d0c%06x rank %d nRanks %d nNodes %d localRanks 8 localRank %d MNNVL "
        "0\n",
        h, p, p, d, r, r, ranks, (ranks + 7) / 8, d);
    for (int c = 0; c < 16; ++c) {
      const int next = (r + 1) % ranks;
      if (host(next) == h)
        emit("node-%02d:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via P2P/CUMEM/read\n", h, p, p + 7, d, c,
             r, d, next, next % 8);
      else
        emit("node-%02d:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d/GDRDMA\n", h, p,
             p + 7, d, c, r, d, next, next % 8, c % 2);
    }
    emit("node-%02d:%d:%d [%d] NCCL INFO Connected all rings, use ring PXN 0 GDR 1\n", h, p, p, d);
    emit(
        "node-%02d:%d:%d [%d] NCCL INFO ncclCommInitRankConfig comm 0x55d0c%06x rank %d nranks %d cudaDev %d nvmlDev "
        "%d busId %x000 commId 0x9f3a5c7e21b4d860 - Init COMPLETE\n",
        h, p, p, d, r, r, ranks, d, d, 0x18 + d);
    emit(
        "node-%02d:%d:%d [%d] NCCL INFO Init timings - ncclCommInitRankConfig: rank %d nranks %d total 1.21 (kernels "
        "0.31, alloc 0.02, bootstrap 0.44, allgathers 0.05, topo 0.21, graphs 0.03, connections 0.14, rest 0.01)\n",
        h, p, p, d, r, ranks);
  }
  for (unsigned comm = 1; mix == "edges" && written < target; ++comm) {
    for (int r = 0; r < ranks && written < target; ++r) {
      const int h = host(r), p = pid(r), d = r % 8;
      for (int c = 0; c < 32; ++c) {
        const int next = (r + 1 + c % 3) % ranks, prev = (r + ranks - 1) % ranks;
        if (host(next) != h) {
          emit("node-%02d:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d/GDRDMA\n", h, p,
               p + 7, d, c, r, d, next, next % 8, c % 4);
          emit("node-%02d:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] [receive] via NET/IB/%d/GDRDMA\n", h,
               p, p + 7, d, c, prev, prev % 8, r, d, c % 4);
        } else if (c % 4 == 3) {
          emit("node-%02d:%d:%d [%d] NCCL INFO Channel %02d/1 : %d[%d] -> %d[%d] via SHM/direct/direct\n", h, p, p + 7,
               d, c, r, d, next, next % 8);
        } else {
          emit("node-%02d:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] via P2P/CUMEM/read\n", h, p, p + 7, d,
               c, r, d, next, next % 8);
        }
      }
      emit("node-%02d:%d:%d [%d] NCCL INFO Connected all rings, use ring PXN 0 GDR 1\n", h, p, p, d);
      emit(
          "node-%02d:%d:%d [%d] NCCL INFO ncclCommInitRankConfig comm 0x%x%06x rank %d nranks %d cudaDev %d nvmlDev %d "
          "busId %x000 commId 0x9f3a5c7e21b4d860 - Init COMPLETE\n",
          h, p, p, d, comm, r, r, ranks, d, d, 0x18 + d);
    }
  }
  static const char* kOps[] = {"AllReduce", "AllReduce", "AllReduce", "Broadcast", "AllGather", "ReduceScatter"};
  uint64_t op = 0;
  while (written < target) {
    for (int r = 0; r < ranks && written < target; ++r) {
      const int h = host(r), p = pid(r), d = r % 8;
      emit(
          "node-%02d:%d:%d [%d] NCCL INFO %s: opCount %llx sendbuff 0x7f3b%08llx recvbuff 0x7f3b%08llx count %llu "
          "datatype 7 op 0 root 0 comm 0x55d0c%06x [nranks=%d] stream 0x55d0d%06x\n",
          h, p, p, d, kOps[op % 6], static_cast<unsigned long long>(op), static_cast<unsigned long long>(op * 4096),
          static_cast<unsigned long long>(op * 4096 + 64), static_cast<unsigned long long>(1 << (10 + op % 12)), r,
          ranks, r);
    }
    ++op;
    if (op % 50000 == 0) {
      emit(
          "\nnode-00:%d:%d [0] misc/socket.cc:540 NCCL WARN socketProgress: Connection closed by remote peer "
          "node-01<41263>\n",
          pid(0), pid(0) + 3);
      emit("[rank0]: step %llu loss 2.31 (application line)\n", static_cast<unsigned long long>(op));
    }
  }
  return 0;
}
