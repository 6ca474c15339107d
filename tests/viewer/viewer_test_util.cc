#include "viewer_test_util.h"

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
  namespace fs = std::filesystem;
  const fs::path p =
      fs::temp_directory_path() / ("ncclrr-viewer-test-" + std::to_string(getpid())) / name;
  std::error_code ec;
  fs::remove_all(p, ec);
  fs::create_directories(p);
  return p.string();
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
