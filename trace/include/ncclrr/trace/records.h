#pragma once
// Fixed-size records: what producers put into the TraceWriter's thread-local rings. Each struct
// is byte-for-byte the FlatBuffers struct of the same name in schemas/trace.fbs (checked by
// tests/recorder), so the writer copies vectors of them into a frame without conversion.
// No CUDA, NCCL or Qt here: analysis and tools include this too.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ncclrr {

// Every NCCL API entry point ncclrr knows. Values are part of the trace format: append only.
enum class Api : uint16_t {
  kUnknown = 0,
  // Collectives: paired across ranks by per-communicator position.
  kAllReduce = 1,
  kBroadcast = 2,
  kBcast = 3,
  kReduce = 4,
  kAllGather = 5,
  kReduceScatter = 6,
  kAlltoAll = 7,
  kGather = 8,
  kScatter = 9,
  // Point to point: paired by (pair, direction, per-pair order).
  kSend = 20,
  kRecv = 21,
  // Group scopes.
  kGroupStart = 30,
  kGroupEnd = 31,
  kGroupSimulateEnd = 32,
  // Lifecycle.
  kGetUniqueId = 40,
  kCommInitRank = 41,
  kCommInitRankConfig = 42,
  kCommInitRankScalable = 43,
  kCommInitAll = 44,
  kCommSplit = 45,
  kCommShrink = 46,
  kCommFinalize = 47,
  kCommDestroy = 48,
  kCommAbort = 49,
  kCommRevoke = 50,
  // Registration, memory, reduction ops.
  kCommRegister = 60,
  kCommDeregister = 61,
  kCommWindowRegister = 62,
  kCommWindowDeregister = 63,
  kMemAlloc = 64,
  kMemFree = 65,
  kRedOpCreatePreMulSum = 66,
  kRedOpDestroy = 67,
  // Queries: counted (QueryCount), not recorded one by one.
  kCommGetAsyncError = 80,
  kCommCount = 81,
  kCommCuDevice = 82,
  kCommUserRank = 83,
  kGetVersion = 84,
  kGetErrorString = 85,
  kGetLastError = 86,
  // Pseudo-call: the comm's async error changed (result = the new value).
  kAsyncErrorChange = 90,
};

std::string_view ApiName(Api api);       // "AllReduce", ... ; "Api(123)" style never: "Unknown"
Api ApiFromName(std::string_view name);  // kUnknown if not a name ApiName returns
inline bool IsCollective(Api a) { return a >= Api::kAllReduce && a <= Api::kScatter; }
inline bool IsP2p(Api a) { return a == Api::kSend || a == Api::kRecv; }
// ncclBcast is ncclBroadcast with in-place buffers: NCCL pairs them with each other, and its
// profiler plugin sees only Broadcast.
inline Api CanonicalApi(Api a) { return a == Api::kBcast ? Api::kBroadcast : a; }
inline bool IsRooted(Api a) {
  return a == Api::kBroadcast || a == Api::kBcast || a == Api::kReduce || a == Api::kGather ||
         a == Api::kScatter;
}
inline bool Reduces(Api a) {
  return a == Api::kAllReduce || a == Api::kReduce || a == Api::kReduceScatter;
}

// NCCL's ncclDataType_t values (nccl.h 2.28), repeated here so that analysis needs no nccl.h.
enum class Dtype : uint8_t {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8e4m3 = 10,
  kFloat8e5m2 = 11,
};
inline constexpr int kNumDtypes = 12;
std::string_view DtypeName(uint8_t dtype);  // "float32", ...; "dtype(N)" for unknown values
size_t DtypeSize(uint8_t dtype);            // 0 for unknown values

// NCCL's ncclRedOp_t built-in values; dynamic (PreMulSum) ops are >= kNumBuiltinOps.
enum class RedOp : int32_t { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };
inline constexpr int kNumBuiltinOps = 5;
std::string_view RedOpName(int32_t op, uint8_t flags);  // "sum", ..., "premulsum"

// CallRecord.flags bits.
namespace call_flags {
inline constexpr uint8_t kPreMulSum = 1u << 0;
inline constexpr uint8_t kScalarOnDevice = 1u << 1;
inline constexpr uint8_t kInPlace = 1u << 2;
inline constexpr uint8_t kAvgDerived = 1u << 3;
inline constexpr uint8_t kNonblocking = 1u << 4;
// The call had not returned when this record was written (a hang, a kill): enter time and
// arguments, exit_ns 0, result 0; seq is the one it was taking. A record of the same uid without
// this bit (the call returned after all) supersedes it; readers drop the in-flight one.
inline constexpr uint8_t kInFlight = 1u << 5;
}  // namespace call_flags

inline constexpr uint64_t kNoSeq = ~uint64_t{0};

struct CallRecord {
  uint64_t uid;
  uint64_t comm_id;
  uint64_t seq;
  uint64_t type_seq;
  uint64_t sendbuff;
  uint64_t recvbuff;
  uint64_t count;
  uint64_t stream;
  uint64_t group_id;
  uint64_t graph_id;
  int64_t enter_ns;
  int64_t exit_ns;
  double scalar;
  uint32_t tid;
  uint32_t callsite;
  int32_t root_peer;
  int32_t device;
  int32_t op;
  int32_t rank;
  uint16_t api;
  uint8_t dtype;
  uint8_t group_depth;
  int8_t result;
  uint8_t capture;
  uint8_t flags;
  uint8_t aux;
};
static_assert(sizeof(CallRecord) == 136);

enum class CommOrigin : uint8_t {
  kUnknown = 0,
  kInitRank,
  kInitRankConfig,
  kInitRankScalable,
  kInitAll,
  kSplit,
  kShrink
};

struct CommRecord {
  uint64_t comm_id;
  uint64_t parent_id;
  uint64_t handle;
  int64_t create_ns;
  int32_t nranks;
  int32_t rank;
  int32_t device;
  int32_t color;
  int32_t key;
  uint32_t lineage;
  uint32_t name_id;
  uint8_t origin;
  uint8_t blocking;
  uint8_t nccl_hash_known;
  uint8_t pad;
};
static_assert(sizeof(CommRecord) == 64);

struct ClockPairRecord {
  int64_t mono_ns;
  int64_t real_ns;
};
static_assert(sizeof(ClockPairRecord) == 16);

struct DropCountRecord {
  int64_t time_ns;
  uint64_t dropped;
  uint32_t tid;
  uint32_t reason;
};
static_assert(sizeof(DropCountRecord) == 24);

enum class GpuTimeSource : uint8_t { kCupti = 0, kEventPair = 1, kPlugin = 2 };
// When a call's kernels ran on the GPU. A record with end_ns 0 from event pairs is a start mark:
// the call was seen running (started, not ended) at collection time, for `ncclrr status`; the
// reader keeps those apart (TraceFile::gpu_started), and a complete record for the same call may
// follow.
struct GpuTimeRecord {
  uint64_t call_uid;
  int64_t start_ns;
  int64_t end_ns;
  uint8_t source;
  uint8_t pad[7];
};
static_assert(sizeof(GpuTimeRecord) == 32);
// Only event pairs make start marks; a CUPTI record with end_ns 0 is a kernel a forced flush
// took while it ran (written before ncclrr skipped those): no mark, no time.
inline bool IsStartMark(const GpuTimeRecord& r) {
  return r.end_ns == 0 && r.source == static_cast<uint8_t>(GpuTimeSource::kEventPair);
}

enum class GraphEventKind : uint8_t {
  kCaptureBegin = 0,
  kCaptureEnd,
  kInstantiate,
  kLaunch,
  kDestroy
};
struct GraphEventRecord {
  uint64_t graph_id;
  uint64_t exec_id;
  uint64_t stream;
  int64_t time_ns;
  uint32_t tid;
  uint8_t kind;
  uint8_t pad[3];
};
static_assert(sizeof(GraphEventRecord) == 40);

struct QueryCountRecord {
  uint64_t comm_id;
  uint16_t api;
  uint16_t pad;
  int32_t rank;  // the querying rank (one process may hold several ranks of one comm)
  uint64_t count;
};
static_assert(sizeof(QueryCountRecord) == 24);

// A ring slot: one record of any fixed-size kind.
enum class RecordKind : uint8_t { kCall = 1, kComm, kClock, kGpuTime, kGraphEvent, kQuery };
struct Record {
  RecordKind kind;
  uint8_t reserved[7];
  union {
    CallRecord call;
    CommRecord comm;
    ClockPairRecord clock;
    GpuTimeRecord gpu;
    GraphEventRecord graph;
    QueryCountRecord query;
  };
};
static_assert(sizeof(Record) == 144);

// Host clocks. Records carry CLOCK_MONOTONIC nanoseconds.
int64_t MonotonicNs();
int64_t RealtimeNs();

}  // namespace ncclrr
