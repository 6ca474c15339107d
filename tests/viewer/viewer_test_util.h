#pragma once
// Shared by the viewer tests: an offscreen Qt application, temporary trace directories, synthetic
// traces with known bugs, sessions loaded the way the viewer loads them, and pixel counting.
#include <QColor>
#include <QImage>
#include <QRectF>
#include <memory>
#include <string>

#include "models/timeline_painter.h"
#include "models/trace_session.h"
#include "ncclrr/testing/synthetic_trace.h"

namespace ncclrr::viewer::testing {

// Creates the application object once (QApplication in the widget tests, QGuiApplication
// otherwise), forcing the offscreen platform unless QT_QPA_PLATFORM is set.
void EnsureApp();

// A fresh, empty directory under the system temp dir, unique to this process and `name`.
std::string TempDir(const std::string& name);

// The demo trace: 2 ranks, 4 allreduces per step, rank 1 swaps two same-size ones in steps 1, 3.
std::string WriteSwapTrace(const std::string& name);
std::string WriteCleanTrace(const std::string& name, int ranks = 2, int steps = 4);
std::string WriteScript(const std::string& name, SyntheticScript script);
// A two-rank trace whose rank 1 stops after 5 calls and never closes its file (a hang).
std::string WriteHangTrace(const std::string& name);

// Two ranks written through the TraceWriter directly, with what the generators do not write:
// GPU times for every call, a sketch and a call site (two stack frames) on rank 0's first call,
// and on rank 1 a last call that never returned (exit_ns = 0) in a file left unclosed.
std::string WriteRichTrace(const std::string& name);

std::shared_ptr<const TraceSession> Load(const std::string& dir);
// Model of `dir` with a report of our own (tests of the viewer's own behaviour).
std::shared_ptr<const TraceSession> LoadWithReport(const std::string& dir, analysis::Report report);

// Renders `session` offscreen (the axis fitted to [begin, end] since the first call; the whole
// trace when begin == end) into an image of w x h.
struct Rendered {
  QImage image;
  TimelineScene scene;
  RowLayout layout;
  PaintStats stats;
};
std::unique_ptr<Rendered> Render(const TraceSession& session, int w, int h, int64_t begin = 0,
                                 int64_t end = 0, std::optional<CallRef> selected = {});
// Pixels of exactly `color` inside `rect` (the whole image when rect is null).
int CountPixels(const QImage& image, const QColor& color, const QRectF& rect = {});

}  // namespace ncclrr::viewer::testing
