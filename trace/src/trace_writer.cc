// TraceWriter implementation. Producer side: Append() and the thread-local ring lookup.
// Writer side: the drain/encode/write loop lives in writer_thread.cc.
#include "ncclrr/trace/trace_writer.h"

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ncclrr/trace/format.h"
#include "writer_impl.h"

namespace ncclrr {

using internal::ThreadRing;

namespace {

// Each thread remembers its ring for the last few writers it appended to, keyed by the
// writer's generation (unique per writer, and renewed in a forked child).
struct TlsEntry {
  uint64_t generation = 0;
  ThreadRing* ring = nullptr;
  std::shared_ptr<ThreadRing> owner;
};
struct TlsRings {
  static constexpr int kSlots = 4;
  TlsEntry entries[kSlots];
  int next = 0;
  ~TlsRings();
};
thread_local TlsRings tls_rings;
// Trivially destructible, so it stays valid while the thread (or, for the main thread, exit())
// runs code after tls_rings was destroyed: such late records are dropped and counted.
thread_local bool tls_rings_gone = false;
std::atomic<uint64_t> g_late_drops{0};

TlsRings::~TlsRings() {
  tls_rings_gone = true;
  for (auto& e : entries)
    if (e.ring) e.ring->dead.store(true, std::memory_order_release);
}

uint32_t RoundUpPow2(uint32_t v) {
  uint32_t p = 2;
  while (p < v && p < (1u << 30)) p <<= 1;
  return p;
}

}  // namespace

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == 0) return "localhost";
  for (char* c = buf; *c; ++c)
    if (*c == '/' || *c == ' ') *c = '_';
  return buf;
}

std::string DefaultTraceFileName(int pid) {
  return HostName() + "-" + std::to_string(pid) + format::kFileSuffix;
}

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceWriter::~TraceWriter() { (void)Close("destroyed"); }

StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Create(WriterOptions options) {
  if (options.dir.empty()) return InvalidArgument("TraceWriter: no trace directory given");
  options.ring_slots = RoundUpPow2(std::max<uint32_t>(options.ring_slots, 64));
  // One slot more than kept: the slot being overwritten while a dump copies is discarded.
  if (options.flight_recorder_calls > 0)
    options.ring_slots = RoundUpPow2(options.flight_recorder_calls + 1);
  auto impl = std::make_unique<Impl>(std::move(options));
  NCCLRR_RETURN_IF_ERROR(impl->OpenFile());
  impl->StartThread();
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(impl)));
}

ThreadRing* TraceWriter::Impl::RingForThisThread() {
  if (__builtin_expect(tls_rings_gone, 0)) return nullptr;
  const uint64_t gen = generation_.load(std::memory_order_relaxed);
  for (auto& e : tls_rings.entries)
    if (e.generation == gen) return e.ring;
  auto ring = RegisterThread();  // slow path: first record of this thread
  TlsEntry& e = tls_rings.entries[tls_rings.next];
  tls_rings.next = (tls_rings.next + 1) % TlsRings::kSlots;
  if (e.ring) e.ring->dead.store(true, std::memory_order_release);
  e.generation = gen;
  e.ring = ring.get();
  e.owner = std::move(ring);
  return e.ring;
}

bool TraceWriter::Append(const Record& record) { return impl_->Append(record); }

bool TraceWriter::AppendCall(const CallRecord& call) {
  Record r;
  r.kind = RecordKind::kCall;
  std::memset(r.reserved, 0, sizeof r.reserved);
  r.call = call;
  return impl_->Append(r);
}

bool TraceWriter::Impl::Append(const Record& record) {
  if (__builtin_expect(forked_.load(std::memory_order_relaxed), 0)) RestartAfterFork();
  if (closed_.load(std::memory_order_relaxed)) return false;
  if (flight_ && record.kind != RecordKind::kCall) {  // only calls are overwritten in flight mode
    std::lock_guard<std::mutex> lock(side_mu_);
    side_.Add(record);
    return true;
  }
  ThreadRing* ring = RingForThisThread();
  if (__builtin_expect(ring == nullptr, 0)) {  // this thread is exiting
    g_late_drops.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const uint64_t h = ring->head.load(std::memory_order_relaxed);
  if (!flight_ && h - ring->cached_tail >= ring->capacity()) {
    ring->cached_tail = ring->tail.load(std::memory_order_acquire);
    while (h - ring->cached_tail >= ring->capacity()) {
      if (options_.overflow == OverflowPolicy::kDrop || closed_.load(std::memory_order_relaxed)) {
        ring->dropped.fetch_add(1, std::memory_order_relaxed);
        Wake();
        return false;
      }
      Wake();
      usleep(50);  // kBlock: stall until the writer makes room
      ring->cached_tail = ring->tail.load(std::memory_order_acquire);
    }
  }
  ring->slots[h & ring->mask] = record;
  ring->head.store(h + 1, std::memory_order_release);
  // Nudge the writer every half ring so bursts drain before the ring fills.
  if (!flight_ && ((h + 1) & (ring->mask >> 1)) == 0) Wake();
  return true;
}

uint64_t TraceWriter::NextCallUid() {
  ThreadRing* ring = impl_->RingForThisThread();
  if (ring == nullptr) return 0;  // this thread is exiting; its record will be dropped
  return (uint64_t{ring->index} << 40) | ring->uid_counter++;
}

uint64_t LateThreadDrops() { return g_late_drops.load(std::memory_order_relaxed); }

uint32_t TraceWriter::Intern(std::string_view text) { return impl_->Intern(text); }

void TraceWriter::AddNote(NoteLevel level, std::string text) {
  impl_->AddSide([&](internal::PendingBatch& b) {
    b.notes.push_back({MonotonicNs(), level, std::move(text)});
  });
}
void TraceWriter::AddSketch(SketchData sketch) {
  impl_->AddSide([&](internal::PendingBatch& b) { b.sketches.push_back(std::move(sketch)); });
}
void TraceWriter::AddCapture(CaptureRefData capture) {
  impl_->AddSide([&](internal::PendingBatch& b) { b.captures.push_back(std::move(capture)); });
}
void TraceWriter::SetNcclVersion(int32_t version) {
  impl_->AddSide([&](internal::PendingBatch& b) { b.nccl_version = version; });
}

void TraceWriter::Flush() { impl_->RequestFlush(/*dump=*/false, 60'000); }
void TraceWriter::FlushFromSignal(int timeout_ms) {
  impl_->RequestFlush(/*dump=*/impl_->flight(), timeout_ms);
}
void TraceWriter::Dump(std::string_view reason) {
  if (!impl_->flight()) return Flush();
  AddNote(NoteLevel::kInfo, "flight recorder dump: " + std::string(reason));
  impl_->RequestFlush(/*dump=*/true, 60'000);
}
Status TraceWriter::Close(std::string_view reason) { return impl_->Close(reason); }
WriterStats TraceWriter::Stats() const { return impl_->Stats(); }
const std::string& TraceWriter::path() const { return impl_->path(); }
bool TraceWriter::flight_recorder() const { return impl_->flight(); }

}  // namespace ncclrr
