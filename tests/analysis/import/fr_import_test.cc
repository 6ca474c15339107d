// Flight Recorder dumps into traces: the pickle and JSON readers on hand-made and damaged input,
// and the importer on the field sets of dump versions 2.0 to 2.10 (tests/data/fr/synthetic,
// written by tests/data/fr/make_synthetic.py; real 2.10 dumps are checked in tests/analysis).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "import/fr_dump.h"
#include "import/py_data.h"
#include "ncclrr/analysis/fr_import.h"
#include "ncclrr/testing/trace_fixtures.h"
#include "ncclrr/trace/describe.h"
#include "ncclrr/trace/trace_reader.h"

namespace ncclrr {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

fs::path FrData() {
  const char* src = std::getenv("NCCLRR_SOURCE_DIR");
  return fs::path(src ? src : ".") / "tests/data/fr";
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A site's frames are joined with '<': Python's own "<module>" must not read as two frames.
TEST(SiteFrame, FileLineAndFunctionWithPythonsAngleBracketsKeptApart) {
  EXPECT_EQ(SiteFrame("/home/u/train.py", 214, "Trainer.step"), "train.py:214 in Trainer.step");
  EXPECT_EQ(SiteFrame("train.py", 9, "<module>"), "train.py:9 in \u2039module\u203a");
  EXPECT_EQ(SiteFrame("<string>", 1, "f.<locals>.g"),
            "\u2039string\u203a:1 in f.\u2039locals\u203a.g");
  EXPECT_EQ(SiteFrame("", 0, ""), ":0 in ");
}

TEST(PickleReader, PlainDataOfProtocol2) {
  // pickle.dumps({'a': [5, -2, 2**40, None, True, 1.5, ('x',)], 'b': 'a'}, protocol=2) with
  // the 'a' key recalled from the memo for 'b'.
  const std::string p(
      "\x80\x02}q\x00(X\x01\x00\x00\x00"
      "aq\x01]q\x02("
      "K\x05J\xfe\xff\xff\xff\x8a\x06\x00\x00\x00\x00\x00\x01N\x88G\x3f\xf8\x00\x00\x00\x00\x00\x00"
      "X\x01\x00\x00\x00xq\x03\x85q\x04"
      "eX\x01\x00\x00\x00"
      "bq\x05h\x01u.",
      68);
  auto d = py::ParsePickle(p);
  ASSERT_TRUE(d.ok()) << d.status().message();
  const py::Value* a = d->Find(d->root(), "a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->kind, py::Kind::kList);
  ASSERT_EQ(a->items.size(), 7u);
  EXPECT_EQ(d->at(a->items[0]).i, 5);
  EXPECT_EQ(d->at(a->items[1]).i, -2);
  EXPECT_EQ(d->at(a->items[2]).i, int64_t{1} << 40);
  EXPECT_EQ(d->at(a->items[3]).kind, py::Kind::kNone);
  EXPECT_EQ(d->at(a->items[4]).kind, py::Kind::kBool);
  EXPECT_EQ(d->at(a->items[5]).f, 1.5);
  EXPECT_EQ(d->at(a->items[6]).kind, py::Kind::kTuple);
  const py::Value* b = d->Find(d->root(), "b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->s, "a");
}

TEST(PickleReader, ObjectsAndTruncationAreClearErrors) {
  auto global =
      py::ParsePickle(std::string("\x80\x02"
                                  "cos\nsystem\n.",
                                  14));
  ASSERT_FALSE(global.ok());
  EXPECT_NE(global.status().message().find("not an opcode of plain data"), std::string::npos);
  EXPECT_NE(global.status().message().find("offset 2"), std::string::npos);
  // Every prefix of a real dump is an error, never a crash (ASan and UBSan builds check more).
  const std::string dump = Slurp(FrData() / "synthetic/old-2.0/nccl_trace_rank_0");
  ASSERT_GT(dump.size(), 100u);
  for (size_t n = 1; n < dump.size(); ++n) EXPECT_FALSE(py::ParsePickle(dump.substr(0, n)).ok());
  auto cut = py::ParsePickle(dump.substr(0, dump.size() / 2));
  EXPECT_NE(cut.status().message().find("truncated"), std::string::npos) << cut.status().message();
  // A list that contains itself (memo) is read without looping or leaking.
  auto self =
      py::ParsePickle(std::string("\x80\x02]q\x00h\x00"
                                  "a.",
                                  9));
  ASSERT_TRUE(self.ok()) << self.status().message();
  EXPECT_EQ(self->root().items.size(), 1u);
}

TEST(FrDump, EncodingsAndForeignFiles) {
  EXPECT_NE(fr::ParseDump("").status().message().find("empty"), std::string::npos);
  EXPECT_NE(fr::ParseDump("hello").status().message().find("not a Flight Recorder dump"),
            std::string::npos);
  EXPECT_NE(fr::ParseDump("[1, 2]").status().message().find("not a Flight Recorder dump"),
            std::string::npos);
  EXPECT_NE(fr::ParseDump("{\"a\": 1}").status().message().find("not a Flight Recorder dump"),
            std::string::npos);
  EXPECT_NE(fr::ParseDump("{\"version\": \"2.10\", \"entries\": 3}")
                .status()
                .message()
                .find("'entries' should be a list, found int"),
            std::string::npos);
  EXPECT_NE(fr::ParseDump(R"({"version": "2.10", "entries": [{"profiling_name": "nccl:x",
            "input_sizes": [["a"]]}]})")
                .status()
                .message()
                .find("entry 0: 'input_sizes'"),
            std::string::npos);
  EXPECT_NE(fr::ParseDump("{\"version\": ").status().message().find("JSON error"),
            std::string::npos);
  // JSON text written through Python's repr of bytes.
  auto repr = fr::ParseDump(R"(b'{"version": "2.10", "entries": []}')");
  ASSERT_TRUE(repr.ok()) << repr.status().message();
  EXPECT_EQ(repr->version, "2.10");
}

struct Imported {
  FrImportResult result;
  TraceDir dir;
};

Imported Import(const ScratchDir& scratch, const std::string& sub) {
  auto r = ImportFlightRecorder({(FrData() / sub).string()}, scratch.path() + "/trace");
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  auto d = LoadTraceDir(scratch.path() + "/trace");
  EXPECT_TRUE(d.ok()) << d.status().message();
  return {std::move(r.value()), d.ok() ? std::move(d.value()) : TraceDir{}};
}

TEST(FrImport, Version20Fields) {
  ScratchDir s("fr-old");
  const Imported im = Import(s, "synthetic/old-2.0");
  ASSERT_EQ(im.dir.files.size(), 2u);
  EXPECT_EQ(im.result.version, "2.0");
  const TraceFile& f = im.dir.files[1];
  EXPECT_EQ(f.header.route, Route::kFlightRecorder);
  ASSERT_EQ(f.calls.size(), 4u);
  ASSERT_EQ(f.comms.size(), 1u);  // no pg_config: the group spans the dumped ranks
  EXPECT_EQ(f.comms[0].nranks, 2);
  EXPECT_EQ(f.comms[0].rank, 1);
  const CallRecord& c = f.calls[2];
  EXPECT_EQ(static_cast<Api>(c.api), Api::kAllReduce);
  EXPECT_EQ(c.seq, 2u);  // seq_id 3, 1-based
  EXPECT_EQ(c.count, 16u);
  EXPECT_EQ(c.dtype, 0xff);  // no dtypes before 2.1: unknown, on every rank alike
  EXPECT_EQ(c.op, -1);
  EXPECT_EQ(f.String(c.callsite), "train.py:214 in worker<train.py:300 in main");
  EXPECT_EQ(im.dir.files[0].calls[2].comm_id, c.comm_id);
}

TEST(FrImport, JsonVariantShowsTheCallInFlight) {
  ScratchDir s("fr-json");
  const Imported im = Import(s, "synthetic/json-2.10");
  ASSERT_EQ(im.dir.files.size(), 2u);
  EXPECT_EQ(im.result.in_flight, 1u);
  const TraceFile& f1 = im.dir.files[1];
  ASSERT_EQ(f1.calls.size(), 2u);
  EXPECT_EQ(static_cast<Api>(f1.calls[0].api), Api::kReduceScatter);
  EXPECT_EQ(f1.calls[0].count, 16u);  // the output's 4x4: NCCL's recvcount
  EXPECT_EQ(f1.calls[0].dtype, static_cast<uint8_t>(Dtype::kFloat16));
  EXPECT_EQ(f1.calls[0].callsite, 0u);  // JSON dumps hold no frames
  EXPECT_TRUE(f1.calls[1].flags & call_flags::kInFlight);
  EXPECT_EQ(f1.calls[1].exit_ns, 0);
  EXPECT_EQ(f1.calls[1].seq, 1u);
}

TEST(FrImport, Protocol5SubgroupP2pAndCounts) {
  ScratchDir s("fr-p2p");
  const Imported im = Import(s, "synthetic/proto5-p2p");
  ASSERT_EQ(im.dir.files.size(), 2u);
  EXPECT_EQ(im.result.ranks, (std::vector<int>{0, 2}));
  const TraceFile& f0 = im.dir.files[0];
  const TraceFile& f2 = im.dir.files[1];
  ASSERT_EQ(f2.comms.size(), 1u);
  EXPECT_EQ(f2.comms[0].rank, 1);  // global rank 2 is rank 1 of group "sub" ([0, 2])
  ASSERT_EQ(f0.calls.size(), 3u);
  EXPECT_EQ(static_cast<Api>(f0.calls[0].api), Api::kSend);
  EXPECT_EQ(f0.calls[0].root_peer, 1);
  EXPECT_EQ(f0.calls[0].count, 64u);  // 32 complex floats travel as 64 floats
  EXPECT_EQ(f0.calls[0].dtype, static_cast<uint8_t>(Dtype::kFloat32));
  EXPECT_EQ(static_cast<Api>(f2.calls[0].api), Api::kRecv);
  EXPECT_EQ(f2.calls[0].root_peer, 0);
  EXPECT_EQ(static_cast<Api>(f0.calls[1].api), Api::kAllGather);
  EXPECT_EQ(f0.calls[1].count, 10u);  // the input: NCCL's sendcount
  EXPECT_EQ(f0.calls[1].dtype, static_cast<uint8_t>(Dtype::kBfloat16));
  EXPECT_EQ(f0.calls[1].seq, 0u);
  EXPECT_EQ(static_cast<Api>(f0.calls[2].api), Api::kAlltoAll);
  EXPECT_EQ(f0.calls[2].count, 6u);  // 12 elements over 2 peers
}

TEST(FrImport, ClearErrors) {
  ScratchDir s("fr-bad");
  const std::string bad = s.path() + "/nccl_trace_rank_0";
  std::ofstream(bad) << "not a dump";
  auto r = ImportFlightRecorder({bad}, s.path() + "/t1");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nccl_trace_rank_0: not a Flight Recorder dump"),
            std::string::npos)
      << r.status().message();
  const std::string noname = s.path() + "/dump";
  std::ofstream(noname) << "{}";
  r = ImportFlightRecorder({noname}, s.path() + "/t2");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot tell the rank"), std::string::npos);
  const std::string one = (FrData() / "synthetic/old-2.0/nccl_trace_rank_0").string();
  r = ImportFlightRecorder({one, one}, s.path() + "/t3");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("two dumps for rank 0"), std::string::npos);
  r = ImportFlightRecorder({s.path() + "/t3"}, s.path() + "/t4");
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace ncclrr
