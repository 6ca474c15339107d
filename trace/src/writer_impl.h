#pragma once
// TraceWriter's private state, shared by trace_writer.cc (producer side) and writer_thread.cc
// (the background writer).
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "batch_encoder.h"
#include "ncclrr/trace/trace_writer.h"
#include "thread_ring.h"

namespace ncclrr {

class TraceWriter::Impl {
 public:
  explicit Impl(WriterOptions options);
  ~Impl();

  Status OpenFile();
  void StartThread();
  bool Append(const Record& record);
  internal::ThreadRing* RingForThisThread();
  uint32_t Intern(std::string_view text);
  template <typename F>
  void AddSide(F&& f) {
    if (forked_.load(std::memory_order_relaxed)) RestartAfterFork();
    std::lock_guard<std::mutex> lock(side_mu_);
    f(side_);
    side_records_.fetch_add(1, std::memory_order_relaxed);
  }
  void RequestFlush(bool dump, int timeout_ms);
  Status Close(std::string_view reason);
  WriterStats Stats() const;
  const std::string& path() const { return path_; }
  bool flight() const { return flight_; }
  void Wake();

  // Fork handling (see pthread_atfork registration in writer_thread.cc).
  void PrepareFork();
  void ParentAfterFork();
  void ChildAfterFork();
  void RestartAfterFork();

 private:
  std::shared_ptr<internal::ThreadRing> RegisterThread();
  friend internal::ThreadRing* RingForThisThread();
  void Loop();
  bool DrainRings(bool dump, internal::PendingBatch* out);
  void WriteBatch(internal::PendingBatch* batch);
  // false: not written. `past_cap`: write even beyond max_file_bytes (the closing frame).
  bool WriteBytes(const uint8_t* data, size_t size, size_t records, bool past_cap = false);

  WriterOptions options_;
  const bool flight_;
  std::string path_;
  int fd_ = -1;

  std::atomic<uint64_t> generation_;
  std::mutex rings_mu_;
  std::vector<std::shared_ptr<internal::ThreadRing>> rings_;
  uint32_t next_thread_index_ = 1;

  std::mutex side_mu_;
  internal::PendingBatch side_;
  std::atomic<uint64_t> side_records_{0};
  std::unordered_map<std::string, uint32_t> interned_;

  // Writer-thread wake-ups and flush handshakes use plain atomics (futex), never locks, so
  // FlushFromSignal stays async-signal-safe.
  std::atomic<uint32_t> wake_seq_{0};
  std::atomic<bool> sleeping_{false};
  std::atomic<uint64_t> flush_req_{0};
  std::atomic<uint64_t> flush_done_{0};
  std::atomic<uint64_t> dump_req_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> closed_{false};
  std::atomic<bool> forked_{false};
  std::atomic<int> writer_tid_{0};
  std::string close_reason_;
  std::mutex close_mu_;
  std::mutex restart_mu_;
  std::thread thread_;

  internal::BatchEncoder encoder_;
  void* zstd_ = nullptr;
  std::vector<uint8_t> frame_buf_;
  std::vector<uint8_t> transpose_buf_;
  bool warned_io_ = false;

  std::atomic<uint64_t> records_written_{0};
  std::atomic<uint64_t> calls_written_{0};
  std::atomic<uint64_t> frames_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> lost_{0};
  std::atomic<uint64_t> retired_dropped_{
      0};  // drops of threads that have exited  // drained but not written (I/O failure, size cap)
  std::atomic<bool> io_failed_{false};
  // What the written records hold, for the footer's summary (writer thread only).
  void Tally(const internal::PendingBatch& batch);
  FooterSummary summary_;
  uint64_t footer_calls_ = 0;  // calls as readers count them (a returned in-flight call once)
  std::unordered_set<uint64_t> captured_uids_, in_flight_uids_;
  int io_errno_ = 0;  // why writing failed (ENOSPC: the disk is full), for the footer
};

}  // namespace ncclrr
