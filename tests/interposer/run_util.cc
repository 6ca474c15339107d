#include "run_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ncclrr/testing/temp_dir.h"
#include "ncclrr/trace/describe.h"

namespace ncclrr::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

std::string FreshDir(const std::string& tag) {
  // No current test inside SetUpTestSuite: then the suite's name stands in.
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto* suite = ::testing::UnitTest::GetInstance()->current_test_suite();
  const std::string who = info ? info->name() : suite ? suite->name() : "suite";
  return ncclrr::testing::FreshTempDir("interposer-" + who + "-" + tag);
}

RunResult RunApp(const std::string& app, const std::vector<std::string>& args,
                 const std::string& trace_dir, const std::map<std::string, std::string>& env) {
  const std::string path = std::string(NCCLRR_APPS_DIR) + "/" + app;
  static std::atomic<int> runs{0};  // RunApp may run on several threads at once
  const std::string io = FreshDir("io-" + app + "-" + std::to_string(runs++));
  const std::string out = io + "/out", err = io + "/err";
  const pid_t pid = fork();
  if (pid == 0) {
    if (!trace_dir.empty()) {
      setenv("LD_PRELOAD", NCCLRR_INTERPOSE_LIB, 1);
      setenv("NCCLRR_TRACE_DIR", trace_dir.c_str(), 1);
    }
    setenv("NCCLRR_HOST_TIMEOUT_MS", "5000", 0);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    std::vector<char*> argv{const_cast<char*>(path.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(path.c_str(), argv.data());
    _exit(127);
  }
  RunResult r;
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = Slurp(out);
  r.err = Slurp(err);
  std::filesystem::remove_all(io);
  return r;
}

std::vector<TraceFile> ReadTraces(const std::string& dir) {
  auto d = LoadTraceDir(dir);
  EXPECT_TRUE(d.ok()) << d.status().message();
  if (!d.ok()) return {};
  return std::move(d->files);
}

TraceFile ReadOnlyTrace(const std::string& dir) {
  auto files = ReadTraces(dir);
  EXPECT_EQ(files.size(), 1u) << "trace files in " << dir;
  return files.empty() ? TraceFile{} : std::move(files[0]);
}

std::string Normalized(const TraceFile& t) {
  std::map<uint64_t, std::string> ids;
  auto id = [&](uint64_t v) -> std::string {
    if (v == 0) return "-";
    auto [it, inserted] = ids.try_emplace(v, "c" + std::to_string(ids.size()));
    return it->second;
  };
  std::map<uint64_t, int> groups;
  std::ostringstream s;
  for (const CommRecord& c : t.comms)
    s << "comm " << id(c.comm_id) << " parent " << id(c.parent_id) << " rank " << c.rank << "/"
      << c.nranks << " dev " << c.device << " color " << c.color << " key " << c.key << " lineage "
      << c.lineage << " origin " << CommOriginName(c.origin) << " blocking " << int(c.blocking)
      << " known " << int(c.nccl_hash_known) << " name '" << t.String(c.name_id) << "'\n";
  for (const CallRecord& c : t.calls) {
    const int group =
        c.group_id == 0 ? -1 : groups.try_emplace(c.group_id, groups.size()).first->second;
    s << ApiName(static_cast<Api>(c.api)) << " " << id(c.comm_id) << " r" << c.rank << " seq "
      << (c.seq == kNoSeq ? -1 : int64_t(c.seq)) << " tseq " << c.type_seq << " n " << c.count
      << " dt " << int(c.dtype) << " op " << c.op << " rp " << c.root_peer << " g" << group << " d"
      << int(c.group_depth) << " res " << int(c.result) << " fl " << int(c.flags) << " sc "
      << c.scalar << " aux " << int(c.aux) << " cap " << int(c.capture) << "\n";
  }
  return s.str();
}

std::vector<CallRecord> CallsOf(const TraceFile& t, Api api) {
  std::vector<CallRecord> out;
  for (const CallRecord& c : t.calls)
    if (static_cast<Api>(c.api) == api) out.push_back(c);
  return out;
}

}  // namespace ncclrr::testing
