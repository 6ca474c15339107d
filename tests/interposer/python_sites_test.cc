// Python call sites: `ncclrr record` of a Python job (python_sites/job.py) that calls the host
// NCCL through a framework's frames with the GIL released, as PyTorch does. Each call must name
// the job's own lines (marked `# site:NAME` in the script), from the main thread and another one.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "run_util.h"

namespace ncclrr::testing {
namespace {

std::string JobDir() {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/interposer/python_sites";
}

// "NAME" -> line of the `# site:NAME` marker in job.py.
std::map<std::string, int> Markers(const std::string& file = "job.py") {
  std::map<std::string, int> lines;
  std::ifstream in(JobDir() + "/" + file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (size_t at = line.find("# site:"); at != std::string::npos) lines[line.substr(at + 7)] = n;
  return lines;
}

bool HavePython() { return RunShell("python3 -c 'import ctypes' 2>/dev/null").code == 0; }

// The interpreters to run the job with: python3, and every CPython 3.9 to 3.13 that pyenv has
// (each has its own frame layout). "minor path" per line.
std::vector<std::pair<int, std::string>> Interpreters() {
  std::vector<std::pair<int, std::string>> out;
  const ShellResult r = RunShell(
      "for p in python3 $(r=$(pyenv root 2>/dev/null) && ls -d \"$r\"/versions/3.*/bin/python3 "
      "2>/dev/null); do $p -c 'import sys; print(sys.version_info[1], sys.executable)' "
      "2>/dev/null; done");
  std::istringstream in(r.out);
  int minor;
  std::string path;
  while (in >> minor >> path) out.emplace_back(minor, path);
  return out;
}

// Records job.py into a fresh directory with `env` ("A=1 B=2") and reads its one trace.
TraceFile RecordJob(const std::string& tag, const std::string& env,
                    const std::string& python = "python3", const std::string& script = "job.py") {
  const std::string dir = FreshDir(tag);
  const std::string bin = std::string(std::getenv("NCCLRR_TEST_BIN")) + "/ncclrr";
  const std::string lib = std::string(std::getenv("NCCLRR_TEST_LIB")) + "/hostnccl";
  const ShellResult r = RunShell(
      "cd '" + JobDir() + "' && NCCLRR_PY_SKIP=fakefw/ LD_LIBRARY_PATH='" + lib + "' " + env +
      " '" + bin + "' record -o '" + dir + "/t' -- '" + python + "' " + script + " 2>&1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("done"), std::string::npos) << r.out;
  return ReadOnlyTrace(dir + "/t");
}

std::string Site(const TraceFile& t, const CallRecord& c) { return t.String(c.callsite); }

bool HasNote(const TraceFile& t, const std::string& text) {
  for (const auto& n : t.notes)
    if (n.text.find(text) != std::string::npos) return true;
  return false;
}

TEST(PythonSites, EachCallNamesTheJobsLinesOnEveryThread) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  const auto m = Markers();
  ASSERT_EQ(m.size(), 7u);
  const auto pythons = Interpreters();
  ASSERT_FALSE(pythons.empty());
  for (const auto& [minor, python] : pythons)
    std::printf("python 3.%d: %s\n", minor, python.c_str());
  for (const auto& [minor, python] : pythons) {
    if (minor < 9 || minor > 13) continue;
    SCOPED_TRACE(python);
    const TraceFile t = RecordJob("pysites-3" + std::to_string(minor), "", python);
    EXPECT_TRUE(HasNote(t, "Python call sites: read from CPython 3." + std::to_string(minor)));
    const auto calls = CallsOf(t, Api::kAllReduce);
    ASSERT_EQ(calls.size(), 12u);  // 3 steps x (2 gradients + loss) + 3 on the side thread
    // Before 3.11 a code object has no qualified name: "step", not "Trainer.step".
    const std::string cls = minor >= 11 ? "Trainer." : "";
    const std::string grad = "job.py:" + std::to_string(m.at("grad")) + " in " + cls +
                             "reduce_gradients<job.py:" + std::to_string(m.at("step")) + " in " +
                             cls + "step";
    const std::string loss = "job.py:" + std::to_string(m.at("loss")) + " in " + cls +
                             "step<job.py:" + std::to_string(m.at("main")) + " in main";
    const std::string side = "job.py:" + std::to_string(m.at("thread")) + " in side_worker<";
    int grads = 0, losses = 0, sides = 0;
    for (const CallRecord& c : calls) {
      const std::string s = Site(t, c);
      if (c.count == 64) grads += s == grad;
      if (c.count == 1) losses += s == loss;
      if (c.count == 8) sides += s.rfind(side, 0) == 0;
      EXPECT_TRUE(s == grad || s == loss || s.rfind(side, 0) == 0) << s;
    }
    EXPECT_EQ(grads, 6);
    EXPECT_EQ(losses, 3);
    EXPECT_EQ(sides, 3);
    // Module level: Python's "<module>", its '<' not taken for the separator of frames.
    const std::string init = "job.py:" + std::to_string(m.at("init")) +
                             " in main<job.py:" + std::to_string(m.at("module")) +
                             " in \u2039module\u203a";
    const auto inits = CallsOf(t, Api::kCommInitAll);
    ASSERT_EQ(inits.size(), 2u);
    for (const CallRecord& c : inits) EXPECT_EQ(Site(t, c), init);
  }
}

TEST(PythonSites, DepthAndOffSwitch) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  const auto m = Markers();
  const TraceFile one = RecordJob("pysites-depth", "NCCLRR_PY_DEPTH=1");
  const std::string grad =
      "job.py:" + std::to_string(m.at("grad")) + " in Trainer.reduce_gradients";
  int grads = 0;
  for (const CallRecord& c : CallsOf(one, Api::kAllReduce)) grads += Site(one, c) == grad;
  EXPECT_EQ(grads, 6);

  const TraceFile off = RecordJob("pysites-off", "NCCLRR_PY_SITES=0");
  ASSERT_FALSE(off.calls.empty());
  for (const CallRecord& c : off.calls) EXPECT_EQ(c.callsite, 0u) << Site(off, c);
  EXPECT_FALSE(HasNote(off, "Python call sites"));
}

// Without the frameworks' frames passed over, the innermost frame is the framework's own.
TEST(PythonSites, FrameworkFramesAreKeptWhenNotSkipped) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  const TraceFile t = RecordJob("pysites-noskip", "NCCLRR_PY_SKIP=, NCCLRR_PY_DEPTH=1");
  const auto calls = CallsOf(t, Api::kAllReduce);
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(Site(t, calls[0]).find("dist.py:"), 0u) << Site(t, calls[0]);
}

// A call made by a framework's hook on the framework's own thread (DDP's PowerSGD hook run by
// autograd): every frame is the framework's, so the site names the innermost one outside the
// collective API (the hook's line), not the API's all_reduce; without API files, the innermost.
TEST(PythonSites, AHookRunByTheFrameworkIsNamedByItsLine) {
  if (!HavePython()) GTEST_SKIP() << "no python3";
  const std::string hook =
      "hooks.py:" + std::to_string(Markers("fakefw/hooks.py").at("hook")) + " in bucket_hook";
  const TraceFile t = RecordJob("pysites-hook",
                                "NCCLRR_PY_SKIP=fakefw/,threading.py "
                                "NCCLRR_PY_API=fakefw/dist.py",
                                "python3", "hook_job.py");
  const auto calls = CallsOf(t, Api::kAllReduce);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(Site(t, calls[0]).find(hook), 0u) << Site(t, calls[0]);
  const TraceFile plain = RecordJob("pysites-hook-noapi",
                                    "NCCLRR_PY_SKIP=fakefw/,threading.py "
                                    "NCCLRR_PY_API=",
                                    "python3", "hook_job.py");
  const auto plain_calls = CallsOf(plain, Api::kAllReduce);
  ASSERT_EQ(plain_calls.size(), 1u);
  EXPECT_EQ(Site(plain, plain_calls[0]).find("dist.py:"), 0u) << Site(plain, plain_calls[0]);
}

// A CPython whose frames ncclrr does not read: the trace says so, the job runs as it would.
TEST(PythonSites, AnotherCPythonIsNamedAndLeftAlone) {
  for (const auto& [minor, python] : Interpreters()) {
    if (minor >= 9) continue;
    SCOPED_TRACE(python);
    const TraceFile t = RecordJob("pysites-old", "", python);
    EXPECT_TRUE(HasNote(t, "Python call sites: none (CPython 3." + std::to_string(minor)));
    EXPECT_TRUE(HasNote(t, "frames are read for 3.9 to 3.13 only"));
    EXPECT_EQ(CallsOf(t, Api::kAllReduce).size(), 12u);
    for (const CallRecord& c : t.calls) EXPECT_EQ(c.callsite, 0u);
    return;  // one is enough
  }
  GTEST_SKIP() << "no CPython older than 3.9 here";
}

TEST(PythonSites, AProcessWithoutPythonSaysNothing) {
  const std::string dir = FreshDir("pysites-native");
  const RunResult r = RunApp("interposer_app_direct", {"threads", "1", "2"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const TraceFile t = ReadOnlyTrace(dir);
  EXPECT_FALSE(HasNote(t, "Python call sites"));
  for (const CallRecord& c : t.calls) EXPECT_EQ(c.callsite, 0u);
}

}  // namespace
}  // namespace ncclrr::testing
