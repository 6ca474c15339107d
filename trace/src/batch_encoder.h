#pragma once
// Collects one frame's worth of records and encodes it as a `Batch` FlatBuffer with a reused
// builder. Owned by the writer thread only.
#include <flatbuffers/flatbuffers.h>

#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "frame_io.h"
#include "ncclrr/trace/record_set.h"
#include "ncclrr/trace/records.h"
#include "ncclrr/trace/trace_data.h"

namespace ncclrr::internal {

struct PendingBatch : RecordSet {
  std::vector<std::pair<uint32_t, std::string>> strings;
  std::optional<FooterData> footer;
  int32_t nccl_version = 0;

  size_t RecordCount() const;
  bool Empty() const { return RecordCount() == 0 && !footer && nccl_version == 0; }
  void Clear();
};

// Counts what a batch holds into a footer summary (writer thread as it writes; reader when a
// file has no footer): distinct (comm, rank) pairs, GPU times, captures, the first notes. Returns
// the calls as readers count them: a call first written while in flight and again when it
// returned counts once (`in_flight`: uids written in flight and not yet returned).
uint64_t AddToFooterSummary(const std::vector<CommRecord>& comms,
                            const std::vector<CallRecord>& calls,
                            const std::vector<GpuTimeRecord>& gpu_times,
                            const std::vector<CaptureRefData>& captures,
                            const std::vector<NoteData>& notes, FooterSummary* s,
                            std::unordered_set<uint64_t>* captured_uids,
                            std::unordered_set<uint64_t>* in_flight);

class BatchEncoder {
 public:
  // Returns the finished buffer (valid until the next Encode).
  std::pair<const uint8_t*, size_t> Encode(const PendingBatch& batch);
  // Where the last encoded buffer holds its calls vector (for the transposed frame codec).
  TransposedRegion CallsRegion() const;

 private:
  flatbuffers::FlatBufferBuilder builder_{1 << 20};
};

// Encodes a Header table (used once per file).
std::vector<uint8_t> EncodeHeader(const HeaderData& h);

}  // namespace ncclrr::internal
