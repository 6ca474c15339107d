// libnccl-profiler-ncclrr.so driven as NCCL 2.23-2.28 drive profiler plugins (nccl_sim.h), each
// scenario in a child process (the plugin keeps one trace file per process and reads its
// environment once), the trace read back with the recorder's reader.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "nccl_sim.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr::profiler::test {
namespace {

namespace fs = std::filesystem;

// Paths of the built libraries (compile definitions: the plugin, the stand-ins).
std::string PluginPath() { return NCCLRR_PROFILER_PLUGIN_PATH; }

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ncclrr-plugin-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `body` in a child with NCCLRR_TRACE_DIR set; the child exits normally (atexit closes
  // the trace). Returns the child's exit status.
  int RunChild(const std::map<std::string, std::string>& env, const std::function<int()>& body) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("NCCLRR_TRACE_DIR", dir_.c_str(), 1);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      std::exit(body());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  TraceFile ReadOnlyFile() {
    auto dir = LoadTraceDir(dir_.string());
    EXPECT_TRUE(dir.ok()) << dir.status().message();
    if (!dir.ok() || dir->files.size() != 1) {
      ADD_FAILURE() << "expected one trace file in " << dir_;
      return {};
    }
    return dir->files[0];
  }
  static std::string Notes(const TraceFile& f) {
    std::string all;
    for (const NoteData& n : f.notes) all += n.text + "\n";
    return all;
  }

  fs::path dir_;
};

int Buf(int i) { return 0x1000 * i; }
void* P(int i) { return reinterpret_cast<void*>(static_cast<uintptr_t>(Buf(i))); }

TEST_F(PluginTest, V5RecordsTheApplicationsCallsInProgramOrder) {
  const int rc = RunChild({}, [] {
    SimNccl nccl(PluginPath(), 5);
    if (!nccl.ok()) return 10;
    void* ctx = nccl.Init(0x1234abcd5678ef00ull, "tp", 2, 1);
    if ((nccl.mask() & (abi::kCollApi | abi::kP2pApi | abi::kColl | abi::kP2p)) !=
        (abi::kCollApi | abi::kP2pApi | abi::kColl | abi::kP2p))
      return 11;
    void* stream = P(0xabc);
    // ncclAllReduce(send, recv, 256, float, sum, comm, stream), not in a group.
    void* g = nccl.GroupApiStart(ctx, 1);
    void* ar = nccl.CollApi(ctx, g, "AllReduce", 256, "ncclFloat32", 0, stream);
    nccl.Launch(ctx, 1, {{true, "AllReduce", 256, "ncclFloat32", 0, P(1), P(2), ar}});
    nccl.Stop(g);
    // ncclBroadcast in place, root 0: NCCL's task counts bytes.
    g = nccl.GroupApiStart(ctx, 1);
    void* bc = nccl.CollApi(ctx, g, "Broadcast", 100, "ncclFloat32", 0, stream);
    nccl.Launch(ctx, 1, {{true, "Broadcast", 400, "ncclInt8", 0, P(3), P(3), bc}});
    nccl.Stop(g);
    // ncclGroupStart(); ncclSend(peer 0); ncclRecv(peer 0); ncclGroupEnd();
    g = nccl.GroupApiStart(ctx, 2);
    void* s = nccl.P2pApi(ctx, g, "Send", 64, "ncclFloat32", stream);
    void* r = nccl.P2pApi(ctx, g, "Recv", 64, "ncclFloat32", stream);
    nccl.Launch(ctx, 1,
                {{false, "Send", 64, "ncclFloat32", 0, P(4), nullptr, s},
                 {false, "Recv", 64, "ncclFloat32", 0, nullptr, P(5), r}});
    nccl.Stop(g);
    // A captured allreduce: no task at capture; graph launches raise tasks naming it again.
    g = nccl.GroupApiStart(ctx, 1, true);
    void* cap = nccl.CollApi(ctx, g, "AllReduce", 8, "ncclFloat32", 0, stream, true);
    nccl.Stop(g);
    for (int launch = 0; launch < 2; ++launch)
      nccl.Launch(ctx, 1, {{true, "AllReduce", 8, "ncclFloat32", 0, P(6), P(7), cap}});
    nccl.Finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const TraceFile f = ReadOnlyFile();
  EXPECT_EQ(f.header.route, Route::kProfilerPlugin);
  EXPECT_TRUE(f.footer.has_value() && f.footer->clean);
  ASSERT_EQ(f.comms.size(), 1u);
  EXPECT_EQ(f.comms[0].comm_id, 0x1234abcd5678ef00ull);
  EXPECT_EQ(f.comms[0].nranks, 2);
  EXPECT_EQ(f.comms[0].rank, 1);
  EXPECT_EQ(f.comms[0].nccl_hash_known, 1);
  EXPECT_EQ(f.String(f.comms[0].name_id), "tp");
  ASSERT_EQ(f.calls.size(), 5u) << Notes(f);

  const CallRecord& ar = f.calls[0];
  EXPECT_EQ(ar.api, static_cast<uint16_t>(Api::kAllReduce));
  EXPECT_EQ(ar.seq, 0u);
  EXPECT_EQ(ar.count, 256u);
  EXPECT_EQ(ar.dtype, static_cast<uint8_t>(Dtype::kFloat32));
  EXPECT_EQ(ar.sendbuff, static_cast<uint64_t>(Buf(1)));
  EXPECT_EQ(ar.recvbuff, static_cast<uint64_t>(Buf(2)));
  EXPECT_EQ(ar.stream, static_cast<uint64_t>(Buf(0xabc)));
  EXPECT_EQ(ar.op, -1) << "NCCL's v5 events do not carry the reduction op";
  EXPECT_EQ(ar.rank, 1);
  EXPECT_EQ(ar.group_depth, 0);
  EXPECT_EQ(ar.group_id, 0u);
  EXPECT_LE(ar.enter_ns, ar.exit_ns);
  EXPECT_EQ(ar.comm_id, 0x1234abcd5678ef00ull);

  const CallRecord& bc = f.calls[1];
  EXPECT_EQ(bc.api, static_cast<uint16_t>(Api::kBroadcast));
  EXPECT_EQ(bc.seq, 1u);
  EXPECT_EQ(bc.count, 100u) << "the API event's count, in elements";
  EXPECT_EQ(bc.dtype, static_cast<uint8_t>(Dtype::kFloat32));
  EXPECT_EQ(bc.root_peer, 0);
  EXPECT_TRUE(bc.flags & call_flags::kInPlace);

  const CallRecord& send = f.calls[2];
  const CallRecord& recv = f.calls[3];
  EXPECT_EQ(send.api, static_cast<uint16_t>(Api::kSend));
  EXPECT_EQ(recv.api, static_cast<uint16_t>(Api::kRecv));
  EXPECT_EQ(send.root_peer, 0);
  EXPECT_EQ(recv.root_peer, 0);
  EXPECT_EQ(send.seq, 0u);
  EXPECT_EQ(recv.seq, 0u);
  EXPECT_EQ(send.sendbuff, static_cast<uint64_t>(Buf(4)));
  EXPECT_EQ(recv.recvbuff, static_cast<uint64_t>(Buf(5)));
  EXPECT_EQ(send.group_depth, 1);
  EXPECT_NE(send.group_id, 0u);
  EXPECT_EQ(send.group_id, recv.group_id);

  const CallRecord& cap = f.calls[4];
  EXPECT_EQ(cap.capture, 1);
  EXPECT_EQ(cap.seq, kNoSeq) << "a template takes no live sequence number";
  EXPECT_NE(Notes(f).find("interface v5"), std::string::npos) << Notes(f);
}

TEST_F(PluginTest, V5TaskOnAnotherThreadAfterTheGroupEnds) {
  // Nonblocking communicators: NCCL's own thread launches after ncclGroupEnd returned.
  const int rc = RunChild({}, [] {
    SimNccl nccl(PluginPath(), 5);
    void* ctx = nccl.Init(0x77, "", 2, 0);
    void* g = nccl.GroupApiStart(ctx, 1);
    void* ar = nccl.CollApi(ctx, g, "ReduceScatter", 32, "ncclFloat32", 0, nullptr);
    nccl.Stop(g);
    void* never = nullptr;
    g = nccl.GroupApiStart(ctx, 1);
    never = nccl.CollApi(ctx, g, "AllReduce", 5, "ncclFloat32", 0, nullptr);
    nccl.Stop(g);
    (void)never;  // its launch never comes (an error): written at finalize
    std::thread nccl_thread([&] {
      nccl.Launch(ctx, 0, {{true, "ReduceScatter", 32, "ncclFloat32", 0, P(1), P(1), ar}});
    });
    nccl_thread.join();
    nccl.Finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const TraceFile f = ReadOnlyFile();
  ASSERT_EQ(f.calls.size(), 2u);
  std::map<uint16_t, CallRecord> by_api;
  for (const CallRecord& c : f.calls) by_api[c.api] = c;
  const CallRecord& rs = by_api.at(static_cast<uint16_t>(Api::kReduceScatter));
  EXPECT_EQ(rs.seq, 0u);
  EXPECT_EQ(rs.sendbuff, static_cast<uint64_t>(Buf(1)));
  EXPECT_TRUE(rs.flags & call_flags::kInPlace) << "rank 0: recv == send + 0";
  const CallRecord& ar = by_api.at(static_cast<uint16_t>(Api::kAllReduce));
  EXPECT_EQ(ar.seq, 1u);
  EXPECT_EQ(ar.sendbuff, 0u) << "never launched: buffers unknown";
}

TEST_F(PluginTest, V5CallWithoutTaskIsWrittenWhenALaterGroupLaunches) {
  // NCCL runs some kernels (symmetric memory) without task events: the call must not wait for
  // finalize once a later launch shows its task will never come.
  const int rc = RunChild({}, [] {
    SimNccl nccl(PluginPath(), 5);
    void* ctx = nccl.Init(0x5e, "", 2, 0);
    void* g = nccl.GroupApiStart(ctx, 1);
    nccl.CollApi(ctx, g, "AllReduce", 11, "ncclFloat32", 0, nullptr);  // no task event
    nccl.Stop(g);
    g = nccl.GroupApiStart(ctx, 1);
    void* b = nccl.CollApi(ctx, g, "AllReduce", 22, "ncclFloat32", 0, nullptr);
    nccl.Launch(ctx, 0, {{true, "AllReduce", 22, "ncclFloat32", 0, P(1), P(2), b}});
    nccl.Stop(g);
    nccl.Finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const TraceFile f = ReadOnlyFile();
  ASSERT_EQ(f.calls.size(), 2u);
  EXPECT_EQ(f.calls[0].count, 11u) << "written when the later call launched, not at finalize";
  EXPECT_EQ(f.calls[0].sendbuff, 0u);
  EXPECT_EQ(f.calls[1].count, 22u);
  EXPECT_NE(Notes(f).find("without telling the profiler plugin"), std::string::npos) << Notes(f);
}

TEST_F(PluginTest, V4RecordsTasksAtLaunch) {
  const int rc = RunChild({}, [] {
    SimNccl nccl(PluginPath(), 4);
    void* ctx = nccl.Init(0xfeedull, "dp", 4, 3);
    if ((nccl.mask() & abi::kGroup) == 0) return 11;  // tasks need a group event
    nccl.Launch(ctx, 3,
                {{true, "AllGather", 4096, "ncclInt8", -1, P(1), P(2), nullptr, 0},
                 {true, "AllReduce", 10, "ncclFloat32", -1, P(3), P(4), nullptr, 0}});
    nccl.Launch(ctx, 3,
                {{false, "Recv", 10, "ncclFloat32", 2, nullptr, P(5)},
                 {false, "Recv", 10, "ncclFloat32", 2, nullptr, P(6)}});
    nccl.Finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const TraceFile f = ReadOnlyFile();
  ASSERT_EQ(f.comms.size(), 1u);
  EXPECT_EQ(f.comms[0].comm_id, 0xfeedull);
  EXPECT_EQ(f.comms[0].nranks, 4);
  ASSERT_EQ(f.calls.size(), 4u);
  EXPECT_EQ(f.calls[0].api, static_cast<uint16_t>(Api::kAllGather));
  EXPECT_EQ(f.calls[0].count, 4096u);
  EXPECT_EQ(f.calls[0].dtype, static_cast<uint8_t>(Dtype::kInt8));
  EXPECT_EQ(f.calls[0].seq, 0u);
  EXPECT_EQ(f.calls[1].seq, 1u);
  EXPECT_EQ(f.calls[1].rank, 3);
  EXPECT_EQ(f.calls[2].root_peer, 2);
  EXPECT_EQ(f.calls[2].seq, 0u);
  EXPECT_EQ(f.calls[3].seq, 1u) << "per-peer order of receives";
  EXPECT_EQ(f.calls[3].recvbuff, static_cast<uint64_t>(Buf(6)));
  EXPECT_NE(Notes(f).find("count in bytes"), std::string::npos) << Notes(f);
}

TEST_F(PluginTest, V1LearnsTheCommFromTasksAndKeepsTheRedOp) {
  const int rc = RunChild({}, [] {
    SimNccl nccl(PluginPath(), 1);
    nccl.v1to3_hash = 0xabcdef;
    nccl.v1to3_name = "world";
    nccl.v1_op = 2;  // max
    void* ctx = nccl.Init(0, nullptr, 0, 0);
    nccl.Launch(ctx, 1, {{true, "Reduce", 8, "ncclFloat32", 0, P(1), P(2)}});
    nccl.Launch(ctx, 1, {{false, "Send", 8, "ncclFloat32", 0, P(3), nullptr}});
    nccl.Finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const TraceFile f = ReadOnlyFile();
  ASSERT_EQ(f.comms.size(), 1u);
  EXPECT_EQ(f.comms[0].comm_id, 0xabcdefull);
  EXPECT_EQ(f.comms[0].nranks, 0) << "v1-v3 do not say";
  EXPECT_EQ(f.comms[0].rank, 1);
  EXPECT_EQ(f.String(f.comms[0].name_id), "world");
  ASSERT_EQ(f.calls.size(), 2u);
  EXPECT_EQ(f.calls[0].api, static_cast<uint16_t>(Api::kReduce));
  EXPECT_EQ(f.calls[0].op, 2);
  EXPECT_EQ(f.calls[0].root_peer, 0);
  EXPECT_EQ(f.calls[0].dtype, static_cast<uint8_t>(Dtype::kFloat32));
  EXPECT_EQ(f.calls[1].api, static_cast<uint16_t>(Api::kSend));
  EXPECT_NE(Notes(f).find("nranks 0"), std::string::npos) << Notes(f);
}

TEST_F(PluginTest, V2AndV3TakeStringsAndHashFromDescriptors) {
  for (int version : {2, 3}) {
    fs::remove_all(dir_);
    const int rc = RunChild({}, [version] {
      SimNccl nccl(PluginPath(), version);
      nccl.v1to3_hash = 0x5150;
      void* ctx = nccl.Init(0, nullptr, 0, 0);
      nccl.Launch(ctx, 0, {{true, "ReduceScatter", 16, "ncclFloat32", -1, P(1), P(2)}});
      nccl.Finalize(ctx);
      return 0;
    });
    ASSERT_EQ(rc, 0);
    const TraceFile f = ReadOnlyFile();
    ASSERT_EQ(f.calls.size(), 1u) << "v" << version;
    EXPECT_EQ(f.calls[0].comm_id, 0x5150u);
    EXPECT_EQ(f.calls[0].api, static_cast<uint16_t>(Api::kReduceScatter));
  }
}

// The preload's side of the handshake, steered by the test (fake_preload.cc).
struct FakePreload {
  bool loaded = false;
  void (*in_call)(int) = nullptr;    // this thread is inside a call the preload records
  void (*comm)(uint64_t) = nullptr;  // the preload records this comm
  static FakePreload Load() {
    FakePreload f;
    void* h = dlopen(FAKE_PRELOAD_PATH, RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) return f;
    f.in_call = reinterpret_cast<void (*)(int)>(dlsym(h, "fakePreloadSetInCall"));
    f.comm = reinterpret_cast<void (*)(uint64_t)>(dlsym(h, "fakePreloadSetComm"));
    f.loaded = f.in_call != nullptr && f.comm != nullptr;
    return f;
  }
};

// Calls the preload records (its wrapper on the stack; a comm it knows) and calls it cannot see.
int DrivePluginBesidePreload() {
  const FakePreload fake = FakePreload::Load();
  if (!fake.loaded) return 20;
  SimNccl v5(PluginPath(), 5);
  void* ctx = v5.Init(0x10, "", 2, 0);
  fake.in_call(1);  // the preload's wrapper is on the stack: it records this call
  void* g = v5.GroupApiStart(ctx, 1);
  void* a = v5.CollApi(ctx, g, "AllReduce", 1, "ncclFloat32", 0, nullptr);
  v5.Launch(ctx, 0, {{true, "AllReduce", 1, "ncclFloat32", 0, P(1), P(2), a}});
  v5.Stop(g);
  fake.in_call(0);  // a call the preload cannot see (a statically linked NCCL)
  g = v5.GroupApiStart(ctx, 1);
  a = v5.CollApi(ctx, g, "AllGather", 2, "ncclFloat32", 0, nullptr);
  v5.Launch(ctx, 0, {{true, "AllGather", 8, "ncclInt8", 0, P(1), P(2), a}});
  v5.Stop(g);
  v5.Finalize(ctx);
  // Task-level versions decide per communicator.
  fake.comm(0x20);
  SimNccl v4(PluginPath(), 4);
  void* known = v4.Init(0x20, "", 2, 0);
  void* unknown = v4.Init(0x30, "", 2, 0);
  v4.Launch(known, 0, {{true, "AllReduce", 1, "ncclFloat32", 0, P(1), P(2)}});
  v4.Launch(unknown, 0, {{true, "AllReduce", 3, "ncclFloat32", 0, P(1), P(2)}});
  v4.Finalize(known);
  v4.Finalize(unknown);
  return 0;
}

std::set<uint64_t> CommIds(const TraceFile& f) {
  std::set<uint64_t> comms;
  for (const CommRecord& c : f.comms) comms.insert(c.comm_id);
  return comms;
}

TEST_F(PluginTest, PreloadRecordingTheCallKeepsThePluginSilent) {
  ASSERT_EQ(RunChild({}, DrivePluginBesidePreload), 0);
  const TraceFile f = ReadOnlyFile();
  EXPECT_NE(f.path.find("-plugin.ncclrr"), std::string::npos)
      << "beside the preload's own file: " << f.path;
  ASSERT_EQ(f.calls.size(), 2u);
  EXPECT_EQ(f.calls[0].api, static_cast<uint16_t>(Api::kAllGather));
  EXPECT_EQ(f.calls[0].seq, 1u) << "still numbered as NCCL pairs it";
  EXPECT_EQ(f.calls[1].comm_id, 0x30u);
  EXPECT_EQ(CommIds(f), (std::set<uint64_t>{0x10, 0x30})) << "no record of the preload's comm";
}

TEST_F(PluginTest, RecordAllRecordsWhatThePreloadRecordsToo) {
  ASSERT_EQ(RunChild({{"NCCLRR_PLUGIN_RECORD_ALL", "1"}}, DrivePluginBesidePreload), 0);
  const TraceFile f = ReadOnlyFile();
  ASSERT_EQ(f.calls.size(), 4u) << "the calls the preload records are recorded too";
  EXPECT_EQ(f.calls[0].api, static_cast<uint16_t>(Api::kAllReduce));
  EXPECT_EQ(CommIds(f), (std::set<uint64_t>{0x10, 0x20, 0x30}));
}

// A communicator created inside the preload's wrapper (ncclCommInitRank on the application's
// thread): the preload sees every call of that NCCL, so the plugin asks for no events at all.
int InitInsidePreloadCall() {
  const FakePreload fake = FakePreload::Load();
  if (!fake.loaded) return 20;
  SimNccl v5(PluginPath(), 5);
  fake.in_call(1);
  void* ctx = v5.Init(0x40, "", 2, 0);
  fake.in_call(0);
  const bool record_all = std::getenv("NCCLRR_PLUGIN_RECORD_ALL") != nullptr;
  if ((v5.mask() == 0) == record_all) return 21;
  v5.Finalize(ctx);
  return 0;
}

TEST_F(PluginTest, CommCreatedThroughThePreloadAsksForNoEvents) {
  EXPECT_EQ(RunChild({}, InitInsidePreloadCall), 0);
  EXPECT_EQ(RunChild({{"NCCLRR_PLUGIN_RECORD_ALL", "1"}}, InitInsidePreloadCall), 0);
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_F(PluginTest, ChainsToTheUsersPluginOfTheSameVersion) {
  const fs::path log = dir_.string() + ".chain.log";
  fs::remove(log);
  const std::string fake = FAKE_PLUGIN_V5_PATH;
  const int rc = RunChild({{"NCCLRR_CHAIN_PROFILER_PLUGIN", fake}, {"FAKE_PLUGIN_LOG", log}}, [] {
    SimNccl nccl(PluginPath(), 5);
    void* ctx = nccl.Init(0x99, "pp", 2, 0);
    if ((nccl.mask() & abi::kProxyOp) == 0) return 12;
    void* g = nccl.GroupApiStart(ctx, 1);
    void* a = nccl.CollApi(ctx, g, "AllReduce", 7, "ncclFloat32", 0, nullptr);
    nccl.Launch(ctx, 0, {{true, "AllReduce", 7, "ncclFloat32", 0, P(1), P(2), a}});
    nccl.Stop(g);
    nccl.Finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const std::string text = ReadFile(log);
  fs::remove(log);
  EXPECT_NE(text.find("init v5 hash=99 name=pp nranks=2 rank=0"), std::string::npos) << text;
  // It asked for groups and collectives, not API events: the group (id 1) is the parent of the
  // collective (id 2), translated into its own handles.
  EXPECT_NE(text.find("start ctx=1 id=1 type=1 parent=0"), std::string::npos) << text;
  EXPECT_NE(text.find("start ctx=1 id=2 type=2 parent=0 func=AllReduce count=7"), std::string::npos)
      << "v5 tasks' parentObj is the API event, which it did not ask for\n"
      << text;
  EXPECT_NE(text.find("stop id=2"), std::string::npos) << text;
  EXPECT_NE(text.find("stop id=1"), std::string::npos) << text;
  EXPECT_NE(text.find("finalize ctx=1"), std::string::npos) << text;
  EXPECT_EQ(text.find("type=512"), std::string::npos) << "no CollApi events: not asked for";
  const TraceFile f = ReadOnlyFile();
  EXPECT_EQ(f.calls.size(), 1u) << "ncclrr still records";
}

TEST_F(PluginTest, ChainsAV4PluginUnderNccl228) {
  const fs::path log = dir_.string() + ".chain4.log";
  fs::remove(log);
  const std::string fake = FAKE_PLUGIN_V4_PATH;
  const int rc = RunChild({{"NCCLRR_CHAIN_PROFILER_PLUGIN", fake}, {"FAKE_PLUGIN_LOG", log}}, [] {
    SimNccl nccl(PluginPath(), 5);
    void* ctx = nccl.Init(0x42, "x", 2, 1);
    void* g = nccl.GroupApiStart(ctx, 1);
    void* a = nccl.CollApi(ctx, g, "AllReduce", 3, "ncclFloat32", 0, nullptr);
    nccl.Launch(ctx, 1, {{true, "AllReduce", 3, "ncclFloat32", 0, P(1), P(2), a}});
    nccl.Stop(g);
    nccl.Finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const std::string text = ReadFile(log);
  fs::remove(log);
  EXPECT_NE(text.find("init v4 hash=42 name=x nranks=2 rank=1"), std::string::npos) << text;
  // In v4 a task's parent is its group: translated from v5's parentGroup.
  EXPECT_NE(text.find("start ctx=1 id=2 type=2 parent=1 func=AllReduce count=3"), std::string::npos)
      << text;
  EXPECT_NE(text.find("finalize ctx=1"), std::string::npos) << text;
}

TEST_F(PluginTest, AChainedPluginThatCannotLoadIsReportedAndSkipped) {
  const int rc =
      RunChild({{"NCCLRR_CHAIN_PROFILER_PLUGIN", "/nonexistent/libnccl-profiler-x.so"}}, [] {
        SimNccl nccl(PluginPath(), 5);
        void* ctx = nccl.Init(0x1, "", 2, 0);
        void* g = nccl.GroupApiStart(ctx, 1);
        void* a = nccl.CollApi(ctx, g, "AllReduce", 1, "ncclFloat32", 0, nullptr);
        nccl.Launch(ctx, 0, {{true, "AllReduce", 1, "ncclFloat32", 0, P(1), P(2), a}});
        nccl.Stop(g);
        nccl.Finalize(ctx);
        return 0;
      });
  ASSERT_EQ(rc, 0);
  const TraceFile f = ReadOnlyFile();
  EXPECT_EQ(f.calls.size(), 1u);
  EXPECT_NE(Notes(f).find("cannot be loaded"), std::string::npos) << Notes(f);
}

TEST_F(PluginTest, DisabledRecordsNothing) {
  const int rc = RunChild({{"NCCLRR_DISABLE", "1"}}, [] {
    SimNccl nccl(PluginPath(), 5);
    void* ctx = nccl.Init(0x1, "", 2, 0);
    if (nccl.mask() != 0) return 13;  // asks NCCL for no events at all
    nccl.Finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  EXPECT_FALSE(fs::exists(dir_) && !fs::is_empty(dir_));
}

TEST_F(PluginTest, UnwritableTraceDirectoryNeverFailsNccl) {
  const int rc = RunChild({{"NCCLRR_TRACE_DIR", "/proc/ncclrr-cannot-create"}}, [] {
    SimNccl nccl(PluginPath(), 5);
    void* ctx = nccl.Init(0x1, "", 2, 0);
    void* g = nccl.GroupApiStart(ctx, 1);
    void* a = nccl.CollApi(ctx, g, "AllReduce", 1, "ncclFloat32", 0, nullptr);
    nccl.Launch(ctx, 0, {{true, "AllReduce", 1, "ncclFloat32", 0, P(1), P(2), a}});
    nccl.Stop(g);
    nccl.Finalize(ctx);
    return 0;
  });
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace ncclrr::profiler::test
