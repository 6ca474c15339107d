// Many producer threads, both overflow policies, and fork during recording.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <thread>
#include <vector>

#include "ncclrr/testing/trace_fixtures.h"
#include "ncclrr/trace/trace_reader.h"
#include "ncclrr/trace/trace_writer.h"

namespace ncclrr {
namespace {

using testing::MakeCall;
using testing::ScratchDir;

TEST(Concurrency, SixtyFourThreadsLoseNothingWhenBlocking) {
  ScratchDir dir("mt");
  WriterOptions o;
  o.dir = dir.path();
  o.overflow = OverflowPolicy::kBlock;
  o.ring_slots = 4096;
  auto w = TraceWriter::Create(o);
  ASSERT_TRUE(w.ok());
  constexpr int kThreads = 64;
  constexpr uint64_t kPerThread = 100'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        CallRecord c = MakeCall(i);
        c.tid = static_cast<uint32_t>(t);
        (*w)->AppendCall(c);
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE((*w)->Close().ok());
  auto f = ReadTraceFile((*w)->path());
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->calls.size(), kThreads * kPerThread);
  // Per thread, every record arrived exactly once and in order.
  std::map<uint32_t, uint64_t> next;
  for (const auto& c : f->calls) {
    ASSERT_EQ(c.seq, next[c.tid]) << "thread " << c.tid;
    next[c.tid]++;
  }
  EXPECT_EQ(f->DroppedRecords(), 0u);
}

TEST(Concurrency, DroppingCountsExactly) {
  ScratchDir dir("drop");
  WriterOptions o;
  o.dir = dir.path();
  o.overflow = OverflowPolicy::kDrop;
  o.ring_slots = 64;
  o.flush_interval_ms = 1000;
  auto w = TraceWriter::Create(o);
  ASSERT_TRUE(w.ok());
  constexpr int kThreads = 8;
  constexpr uint64_t kPerThread = 50'000;
  std::vector<uint64_t> accepted(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        CallRecord c = MakeCall(i);
        c.tid = static_cast<uint32_t>(t);
        accepted[t] += (*w)->AppendCall(c) ? 1 : 0;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE((*w)->Close().ok());
  auto f = ReadTraceFile((*w)->path());
  ASSERT_TRUE(f.ok());
  uint64_t total_accepted = 0;
  for (auto a : accepted) total_accepted += a;
  EXPECT_EQ(f->calls.size(), total_accepted);
  EXPECT_EQ(f->DroppedRecords(), kThreads * kPerThread - total_accepted);
  EXPECT_GT(f->DroppedRecords(), 0u);  // a 64-slot ring cannot keep up with 8 threads
}

TEST(Concurrency, ForkedChildRecordsToItsOwnFile) {
  ScratchDir dir("fork");
  WriterOptions o;
  o.dir = dir.path();
  o.overflow = OverflowPolicy::kBlock;
  auto w = TraceWriter::Create(o);
  ASSERT_TRUE(w.ok());
  std::atomic<bool> stop{false};
  // A busy sibling thread holds the writer's state in motion while we fork.
  std::thread busy([&] {
    for (uint64_t i = 0; !stop; ++i) (*w)->AppendCall(MakeCall(i));
  });
  for (uint64_t i = 0; i < 100; ++i) (*w)->AppendCall(MakeCall(i));
  const pid_t child = fork();
  if (child == 0) {
    for (uint64_t i = 0; i < 7; ++i) {
      CallRecord c = MakeCall(i);
      c.comm_id = 0xc41d;
      (*w)->AppendCall(c);
    }
    _exit((*w)->Close("child done").ok() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  stop = true;
  busy.join();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_TRUE((*w)->Close().ok());

  const std::string child_path =
      (std::filesystem::path(dir.path()) / DefaultTraceFileName(child)).string();
  auto c = ReadTraceFile(child_path);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->header.pid, child);
  ASSERT_EQ(c->calls.size(), 7u);
  for (const auto& call : c->calls) EXPECT_EQ(call.comm_id, 0xc41du);
  auto p = ReadTraceFile((*w)->path());
  ASSERT_TRUE(p.ok());
  EXPECT_GE(p->calls.size(), 100u);
  for (const auto& call : p->calls) EXPECT_NE(call.comm_id, 0xc41du);
}

}  // namespace
}  // namespace ncclrr

namespace ncclrr {
namespace {

// A thread-local object constructed before the thread's first record is destroyed after the
// writer's thread-local state: records it appends then are dropped and counted, never a crash.
struct AppendsInDestructor {
  TraceWriter* writer = nullptr;
  ~AppendsInDestructor() {
    if (writer) writer->AppendCall(testing::MakeCall(1));
  }
};
thread_local AppendsInDestructor tls_late;

TEST(Concurrency, RecordsAfterThreadLocalTeardownAreDropped) {
  testing::ScratchDir dir("late");
  WriterOptions o;
  o.dir = dir.path();
  auto w = TraceWriter::Create(o);
  ASSERT_TRUE(w.ok());
  const uint64_t before = LateThreadDrops();
  std::thread t([&] {
    tls_late.writer = w->get();  // constructed first, so destroyed last
    (*w)->AppendCall(testing::MakeCall(0));
  });
  t.join();
  EXPECT_EQ(LateThreadDrops(), before + 1);
  ASSERT_TRUE((*w)->Close().ok());
  auto f = ReadTraceFile((*w)->path());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->calls.size(), 1u);
}

}  // namespace
}  // namespace ncclrr
