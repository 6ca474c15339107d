#include "ncclrr/synthetic_trace.h"

#include <unistd.h>

#include <algorithm>

#include "ncclrr/trace_writer.h"

namespace ncclrr {

StatusOr<SyntheticTraceResult> WriteSyntheticTrace(const SyntheticTraceOptions& o) {
  SyntheticTraceResult result;
  const uint64_t comm_id = o.base_comm_id | 0x1;
  for (int rank = 0; rank < o.ranks; ++rank) {
    WriterOptions w;
    w.dir = o.dir;
    w.file_name = "synthetic-rank" + std::to_string(rank) + ".ncclrr";
    w.overflow = OverflowPolicy::kBlock;
    w.compress = o.compress;
    w.header.host = "synthetic";
    w.header.route = Route::kGenerator;
    w.header.nccl_version = 22809;
    w.header.argv = {"synthetic", "--ranks", std::to_string(o.ranks)};
    auto writer = TraceWriter::Create(w);
    if (!writer.ok()) return writer.status();
    TraceWriter& tw = **writer;
    const uint32_t name = tw.Intern("synthetic.dp");
    Record comm{};
    comm.kind = RecordKind::kComm;
    comm.comm = CommRecord{comm_id, 0,       0x7f0000001000ull + rank,
                           1000,    o.ranks, rank,
                           rank,    0,       0,
                           0,       name,    static_cast<uint8_t>(CommOrigin::kInitRank),
                           1,       1,       0};
    tw.Append(comm);
    // Times: every rank starts a step at the same nominal instant plus a little skew.
    int64_t t = 1'000'000 + rank * 1'500;
    uint64_t seq = 0;
    bool stopped = false;
    for (int step = 0; step < o.steps && !stopped; ++step) {
      std::vector<size_t> order(o.counts.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      const bool swap =
          rank == o.swap_rank &&
          std::find(o.swap_steps.begin(), o.swap_steps.end(), step) != o.swap_steps.end() &&
          o.swap_index + 1 < static_cast<int>(order.size());
      if (swap) std::swap(order[o.swap_index], order[o.swap_index + 1]);
      for (size_t k = 0; k < order.size(); ++k) {
        if (rank == o.missing_rank && step == o.missing_step &&
            static_cast<int>(k) == o.missing_index) {
          stopped = true;
          break;
        }
        const size_t i = order[k];
        uint64_t count = o.counts[i];
        if (rank == o.count_delta_rank && step == o.count_delta_step &&
            static_cast<int>(k) == o.count_delta_index)
          count = static_cast<uint64_t>(static_cast<int64_t>(count) + o.count_delta);
        CallRecord c{};
        c.uid = tw.NextCallUid();
        c.comm_id = comm_id;
        c.seq = seq;
        c.type_seq = seq;
        ++seq;
        c.sendbuff = 0x7f1000000000ull + (i << 24);  // one buffer per logical tensor
        c.recvbuff = c.sendbuff;
        c.count = count;
        c.stream = 0x5000 + rank;
        c.enter_ns = t;
        c.exit_ns = t + 4'000 + static_cast<int64_t>(count / 64);
        c.tid = 100 + rank;
        c.root_peer = -1;
        c.device = rank;
        c.op = 0;
        c.rank = rank;
        c.api = static_cast<uint16_t>(Api::kAllReduce);
        c.dtype = static_cast<uint8_t>(Dtype::kFloat32);
        c.flags = call_flags::kInPlace;
        tw.AppendCall(c);
        ++result.calls;
        t = c.exit_ns + 20'000;
      }
      t += 1'000'000;
    }
    if (o.close_files) {
      NCCLRR_RETURN_IF_ERROR(tw.Close("synthetic trace complete"));
    } else {
      tw.Flush();
      // Leave the file as a killed process would: no footer. The writer is abandoned on purpose.
      (void)writer->release();
    }
    result.files.push_back(o.dir + "/" + w.file_name);
  }
  return result;
}

}  // namespace ncclrr
