#pragma once
// Test fixtures for traces: record builders (scratch directories: temp_dir.h).
#include <unistd.h>

#include <filesystem>
#include <string>

#include "ncclrr/testing/temp_dir.h"
#include "ncclrr/trace/records.h"

namespace ncclrr::testing {

inline CallRecord MakeCall(uint64_t i) {
  CallRecord c{};
  c.uid = i;
  c.comm_id = 0xabcdef0123456789ull;
  c.seq = i;
  c.type_seq = i / 2;
  c.sendbuff = 0x7f0000000000ull + (i % 7) * 4096;
  c.recvbuff = c.sendbuff + 64;
  c.count = 1024 + (i % 3);
  c.stream = 0x55;
  c.group_id = i % 5;
  c.graph_id = 0;
  c.enter_ns = static_cast<int64_t>(1'000'000 + i * 1'000);
  c.exit_ns = c.enter_ns + 500;
  c.scalar = 0.5;
  c.tid = 42;
  c.callsite = 3;
  c.root_peer = -1;
  c.device = 1;
  c.op = 0;
  c.rank = 1;
  c.api = static_cast<uint16_t>(Api::kAllReduce);
  c.dtype = static_cast<uint8_t>(Dtype::kFloat32);
  c.group_depth = 1;
  c.result = 0;
  c.capture = 0;
  c.flags = call_flags::kInPlace;
  c.aux = 7;
  return c;
}

inline Record Wrap(const CallRecord& c) {
  Record r{};
  r.kind = RecordKind::kCall;
  r.call = c;
  return r;
}

}  // namespace ncclrr::testing
