#include "viewer_test_util.h"
#include "ncclrr/testing/temp_dir.h"

#include "ncclrr/trace/trace_writer.h"

#include <unistd.h>

#include <QPainter>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#ifdef NCCLRR_VIEWER_TEST_WIDGETS
#include <QApplication>
using TestApp = QApplication;
#else
#include <QGuiApplication>
using TestApp = QGuiApplication;
#endif

#include <gtest/gtest.h>

namespace ncclrr::viewer::testing {

// The offscreen platform warns on every window shown; nothing a test can act on.
static void QuietMessages(QtMsgType type, const QMessageLogContext&, const QString& msg) {
  if (msg.contains("propagateSizeHints") || msg.contains("XDG_RUNTIME_DIR")) return;
  std::fprintf(stderr, "%s%s\n", type == QtWarningMsg ? "Qt warning: " : "", qPrintable(msg));
}

void EnsureApp() {
  if (QCoreApplication::instance()) return;
  qInstallMessageHandler(QuietMessages);
  if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  // Recent files and window state go to a private place, not the user's settings.
  setenv("XDG_CONFIG_HOME", TempDir("xdg-config").c_str(), 1);
  static int argc = 1;
  static char name[] = "viewer-tests";
  static char* argv[] = {name, nullptr};
  static TestApp* app = new TestApp(argc, argv);
  (void)app;
}

std::string TempDir(const std::string& name) {
  return ncclrr::testing::FreshTempDir("viewer-test-" + name);
}

static std::string WriteOrFail(SyntheticTraceOptions o) {
  auto r = WriteSyntheticTrace(o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return o.dir;
}

std::string WriteSwapTrace(const std::string& name) {
  SyntheticTraceOptions o;
  o.dir = TempDir(name);
  o.swap_rank = 1;
  o.swap_index = 1;
  o.swap_steps = {1, 3};
  return WriteOrFail(o);
}

std::string WriteCleanTrace(const std::string& name, int ranks, int steps) {
  SyntheticTraceOptions o;
  o.dir = TempDir(name);
  o.ranks = ranks;
  o.steps = steps;
  return WriteOrFail(o);
}

std::string WriteScript(const std::string& name, SyntheticScript script) {
  script.dir = TempDir(name);
  auto r = WriteSyntheticScript(script);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return script.dir;
}

std::string WriteHangTrace(const std::string& name) {
  SyntheticTraceOptions o;
  o.dir = TempDir(name);
  o.missing_rank = 1;
  o.missing_step = 1;
  o.missing_index = 1;
  o.close_files = false;
  return WriteOrFail(o);
}

std::string WriteRichTrace(const std::string& name) {
  const std::string dir = TempDir(name);
  for (int rank = 0; rank < 2; ++rank) {
    WriterOptions w;
    w.dir = dir;
    w.file_name = "rich-rank" + std::to_string(rank) + ".ncclrr";
    w.overflow = OverflowPolicy::kBlock;
    w.header.host = "rich";
    auto writer = TraceWriter::Create(w);
    EXPECT_TRUE(writer.ok()) << writer.status().message();
    if (!writer.ok()) return dir;
    TraceWriter& tw = **writer;
    Record comm{};
    comm.kind = RecordKind::kComm;
    comm.comm = CommRecord{0xabc,
                           0,
                           0x1000,
                           0,
                           2,
                           rank,
                           rank,
                           0,
                           0,
                           0,
                           tw.Intern("rich.world"),
                           static_cast<uint8_t>(CommOrigin::kInitRank),
                           1,
                           1,
                           0};
    tw.Append(comm);
    const int64_t base = MonotonicNs();
    const uint32_t site = tw.Intern("train.py:42 in step<ddp.py:310 in allreduce_bucket");
    const int calls = rank == 1 ? 5 : 4;
    for (int k = 0; k < calls; ++k) {
      CallRecord c{};
      c.uid = tw.NextCallUid();
      c.comm_id = 0xabc;
      c.seq = c.type_seq = static_cast<uint64_t>(k);
      c.sendbuff = c.recvbuff = 0x7f0000000000ull + (static_cast<uint64_t>(k) << 20);
      c.count = 4096;
      c.stream = 0x9000 + rank;
      c.enter_ns = base + k * 100'000;
      c.exit_ns = k == 4 ? 0 : c.enter_ns + 10'000;  // rank 1's fifth call never returns
      c.root_peer = -1;
      c.device = rank;
      c.rank = rank;
      c.api = static_cast<uint16_t>(Api::kAllReduce);
      c.dtype = static_cast<uint8_t>(Dtype::kFloat32);
      c.callsite = k == 0 ? site : 0;
      tw.AppendCall(c);
      if (k < 4) {
        Record g{};
        g.kind = RecordKind::kGpuTime;
        g.gpu = GpuTimeRecord{c.uid, c.enter_ns + 20'000, c.enter_ns + 60'000, 0, {}};
        tw.Append(g);
      }
      if (k == 0 && rank == 0) {
        SketchData sk;
        sk.call_uid = c.uid;
        sk.which = SketchWhich::kSendBefore;
        sk.dtype = c.dtype;
        sk.count = c.count;
        sk.dots[0] = 1.5;
        sk.sumsq = 42;
        sk.sample_idx = {0, 7};
        sk.samples = {0.25, -1};
        tw.AddSketch(sk);
        sk.which = SketchWhich::kSendBeforeSample;  // the race twin (format 1.1)
        tw.AddSketch(sk);
      }
    }
    if (rank == 1) {  // still alive 2 ms after the call that never returned
      Record clock{};
      clock.kind = RecordKind::kClock;
      clock.clock =
          ClockPairRecord{base + 2'400'000, base + 2'400'000 + (RealtimeNs() - MonotonicNs())};
      tw.Append(clock);
    }
    if (rank == 0) {
      EXPECT_TRUE(tw.Close("done").ok());
    } else {
      tw.Flush();
      (void)writer->release();  // left open, as a hung process's file is
    }
  }
  return dir;
}

std::shared_ptr<const TraceSession> Load(const std::string& dir) {
  auto s = TraceSession::Load(dir);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? s.value() : nullptr;
}

std::shared_ptr<const TraceSession> LoadWithReport(const std::string& dir,
                                                   analysis::Report report) {
  auto m = analysis::TraceModel::Load(dir);
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return nullptr;
  return TraceSession::Make(dir, std::move(m.value()), std::move(report));
}

std::unique_ptr<Rendered> Render(const TraceSession& session, int w, int h, int64_t begin,
                                 int64_t end, std::optional<CallRef> selected) {
  auto r = std::make_unique<Rendered>();
  r->layout = LayOutRows(session.timeline(), {}, r->scene.geometry);
  r->scene.session = &session;
  r->scene.index = &session.timeline();
  r->scene.layout = &r->layout;
  r->scene.width = w;
  r->scene.height = h;
  r->scene.axis.Resize(w - r->scene.geometry.label_width);
  if (begin == end)
    r->scene.axis.Fit(session.timeline().begin_ns, session.timeline().end_ns);
  else
    r->scene.axis.Fit(begin, end);
  r->scene.selected = selected;
  r->image = QImage(w, h, QImage::Format_ARGB32_Premultiplied);
  QPainter p(&r->image);
  r->stats = PaintTimeline(p, r->scene);
  return r;
}

int CountPixels(const QImage& image, const QColor& color, const QRectF& rect) {
  const QRect area = rect.isNull() ? image.rect() : rect.toAlignedRect().intersected(image.rect());
  const QRgb want = color.rgb();
  int n = 0;
  for (int y = area.top(); y <= area.bottom(); ++y) {
    const QRgb* line = reinterpret_cast<const QRgb*>(image.constScanLine(y));
    for (int x = area.left(); x <= area.right(); ++x)
      n += qRgb(qRed(line[x]), qGreen(line[x]), qBlue(line[x])) == want;
  }
  return n;
}

}  // namespace ncclrr::viewer::testing
