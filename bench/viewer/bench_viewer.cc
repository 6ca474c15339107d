// bench-viewer [--calls N[,N...]] [--ranks R] [--frames F] [--size WxH] [--dir BASE]
//              [--max-calls N]
//
// The viewer at scale, offscreen: for each size, a synthetic trace (R ranks, 4 allreduces per
// step; generated once under BASE/<N> and reused), then
//   load   TraceSession::Load: read + model (analysis), Check (analysis), timeline index (viewer)
//   open   after loading: row layout, fit, and the first frame
//   pan    frames while panning 40 px per frame, at three zoom levels
//   zoom   frames while zooming in and out by 1.3x about the centre
// Frames are painted into a WxH QImage exactly as the widget paints them. Prints medians, p95
// and max; the targets are open < 2 s and frames <= 16 ms. A trace of more than --max-calls
// calls (default: what fits in the free memory) is shown at levels of detail, as the window
// shows it: the outline pass, buckets, the check in passes, and
//   window  reading the calls of a view of ~1 M calls and painting them.
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/timeline_painter.h"
#include "ncclrr/base/args.h"
#include "ncclrr/testing/synthetic_trace.h"

namespace {

using Clock = std::chrono::steady_clock;
using ncclrr::viewer::TimelineScene;

double Ms(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Stats {
  double median = 0, p95 = 0, max = 0;
};

Stats Summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.p95 = v[std::min(v.size() - 1, v.size() * 95 / 100)];
  s.max = v.back();
  return s;
}

// A size from /proc/self/status ("VmRSS:", "VmHWM:"), in MB.
long StatusMb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key)) / 1024;
  return -1;
}
long RssMb() { return StatusMb("VmRSS:"); }
long PeakRssMb() { return StatusMb("VmHWM:"); }

std::string EnsureTrace(const std::string& base, uint64_t calls, int ranks) {
  const std::string dir = base + "/" + std::to_string(calls) + "-r" + std::to_string(ranks);
  const std::string done = dir + "/.complete";
  if (std::filesystem::exists(done)) return dir;
  std::filesystem::remove_all(dir);
  ncclrr::SyntheticTraceOptions o;
  o.dir = dir;
  o.ranks = ranks;
  o.steps = static_cast<int>(calls / (static_cast<uint64_t>(ranks) * o.counts.size()));
  o.swap_rank = ranks - 1;  // a few findings to draw, as in a real bug hunt
  o.swap_steps = {o.steps / 3, 2 * o.steps / 3};
  const auto t0 = Clock::now();
  auto r = ncclrr::WriteSyntheticTrace(o);
  if (!r.ok()) {
    std::fprintf(stderr, "bench-viewer: writing %s: %s\n", dir.c_str(),
                 r.status().message().c_str());
    std::exit(2);
  }
  std::printf("  generated %llu calls into %s in %.1f s\n",
              static_cast<unsigned long long>(r->calls), dir.c_str(), Ms(t0) / 1000);
  std::ofstream(done) << r->calls << "\n";
  return dir;
}

double Frame(QImage& image, const TimelineScene& scene, ncclrr::viewer::PaintStats* stats) {
  const auto t0 = Clock::now();
  QPainter p(&image);
  *stats = ncclrr::viewer::PaintTimeline(p, scene);
  p.end();
  return Ms(t0);
}

void Report(const char* what, const std::vector<double>& v, size_t runs) {
  const Stats s = Summarize(v);
  std::printf("  %-34s median %6.2f ms  p95 %6.2f ms  max %6.2f ms  (%zu frames, %zu runs/frame)\n",
              what, s.median, s.p95, s.max, v.size(), runs);
}

// Frames panning 40 px each way, reported as `what`.
void Pan(const char* what, int frames, QImage& image, TimelineScene& scene) {
  ncclrr::viewer::PaintStats stats;
  std::vector<double> ms;
  size_t runs = 0;
  for (int i = 0; i < frames; ++i) {
    scene.axis.PanPixels(i % 20 < 10 ? 40 : -40);
    ms.push_back(Frame(image, scene, &stats));
    runs = std::max(runs, stats.runs);
  }
  Report(what, ms, runs);
}

// What the window does with a session: lay out the rows, fit the whole trace, paint a frame.
void FirstFrame(const ncclrr::viewer::TraceSession& s, QImage& image,
                ncclrr::viewer::TimelineScene& scene, ncclrr::viewer::RowLayout& layout) {
  using namespace ncclrr::viewer;
  layout = LayOutRows(s.timeline(), {}, scene.geometry);
  scene.session = &s;
  scene.index = &s.timeline();
  scene.layout = &layout;
  scene.width = image.width();
  scene.height = image.height();
  scene.axis.Resize(image.width() - scene.geometry.label_width);
  scene.axis.Fit(s.timeline().begin_ns, s.timeline().end_ns);
  PaintStats stats;
  Frame(image, scene, &stats);
}

// A trace shown at levels of detail: a view of about `calls` calls a third into the trace, its
// calls read as the window reads them, then frames panning there.
void BenchWindow(const ncclrr::viewer::TraceSession& s, uint64_t calls, int frames, QImage& image,
                 TimelineScene& scene, ncclrr::viewer::RowLayout& layout) {
  using namespace ncclrr::viewer;
  const WindowedTrace& t = *s.windowed();
  const int64_t begin = s.timeline().begin_ns, span = s.timeline().end_ns - begin;
  const int64_t width = static_cast<int64_t>(static_cast<double>(span) * calls /
                                             static_cast<double>(std::max<uint64_t>(t.calls(), 1)));
  const int64_t from = begin + span / 3, to = from + width;
  const auto t0 = Clock::now();
  auto w = TraceSession::LoadWindow(s, std::make_pair(from - width, to + width));
  if (!w.ok()) {
    std::fprintf(stderr, "bench-viewer: window: %s\n", w.status().message().c_str());
    std::exit(2);
  }
  const double read_ms = Ms(t0);
  uint64_t real = 0;
  for (uint32_t f = 0; f < (*w)->model().dir().files.size(); ++f)
    for (uint32_t i = 0; i < (*w)->model().file(f).calls.size(); ++i)
      real += (*w)->BucketAt({f, i}) == nullptr;
  layout = LayOutRows((*w)->timeline(), {}, scene.geometry);
  scene.session = w->get();
  scene.index = &(*w)->timeline();
  scene.axis.Fit(from, to);
  std::printf(
      "  window of %llu calls in view (%llu read, with as many on each side): read and "
      "indexed in %.2f s; RSS %ld MB\n",
      static_cast<unsigned long long>(t.CallsIn(from, to)), static_cast<unsigned long long>(real),
      read_ms / 1000, RssMb());
  Pan("pan, window of ~1 M calls in view", frames, image, scene);
  scene.session = &s;
  scene.index = &s.timeline();
  layout = LayOutRows(s.timeline(), {}, scene.geometry);
}

void Bench(const std::string& dir, int frames, int w, int h,
           const ncclrr::viewer::SessionOptions& options) {
  using namespace ncclrr::viewer;
  QImage image(w, h, QImage::Format_ARGB32_Premultiplied);
  TimelineScene scene;
  RowLayout layout;
  // The viewer's route: the timeline is painted as soon as it is indexed, the findings come
  // when the check is done.
  auto t0 = Clock::now();
  double shown_ms = 0;
  auto loaded = TraceSession::Load(
      dir, {},
      [&](std::shared_ptr<const TraceSession> first) {
        FirstFrame(*first, image, scene, layout);
        shown_ms = Ms(t0);
      },
      options);
  const double load_ms = Ms(t0);
  if (!loaded.ok()) {
    std::fprintf(stderr, "bench-viewer: %s\n", loaded.status().message().c_str());
    std::exit(2);
  }
  const TraceSession& s = *loaded.value();
  const LoadTimings& t = s.timings();
  std::printf(
      "  open: timeline on screen after %.2f s (read+model %.2f s, timeline index %.2f s, "
      "first frame); findings after %.2f s (check %.2f s, marks %.2f s); %llu calls, %zu "
      "findings, RSS %ld MB\n",
      shown_ms / 1000, t.read_s, t.index_s, load_ms / 1000, t.check_s, t.marks_s,
      static_cast<unsigned long long>(s.timeline().boxes), s.report().findings.size(), RssMb());
  if (s.windowed()) {
    std::printf("  shown at levels of detail: %llu calls as %llu boxes; peak RSS %ld MB\n",
                static_cast<unsigned long long>(s.windowed()->calls()),
                static_cast<unsigned long long>(s.timeline().boxes), PeakRssMb());
    for (const auto& note : s.report().notes) std::printf("  note: %s\n", note.message.c_str());
  }

  t0 = Clock::now();
  FirstFrame(s, image, scene, layout);
  const double open_ms = Ms(t0);
  std::printf("  open after loading (layout + fit + first frame): %.1f ms\n", open_ms);
  PaintStats stats;

  const int64_t span = s.timeline().end_ns - s.timeline().begin_ns;
  struct Level {
    const char* name;
    double fraction;
  };
  for (const Level& level :
       {Level{"pan, whole trace in view", 1.0}, Level{"pan, 1/100 of the trace in view", 0.01},
        Level{"pan, 1/10000 of the trace in view", 1e-4}}) {
    scene.axis.Fit(s.timeline().begin_ns + span / 3,
                   s.timeline().begin_ns + span / 3 + static_cast<int64_t>(span * level.fraction));
    Pan(level.name, frames, image, scene);
  }
  scene.axis.Fit(s.timeline().begin_ns, s.timeline().end_ns);
  std::vector<double> ms;
  size_t runs = 0;
  for (int i = 0; i < frames; ++i) {
    // 30 steps in (1.3^30 ~ 2600x), then back out, about a point a third into the view.
    scene.axis.ZoomAt(scene.axis.width_px / 3, (i / 30) % 2 == 0 ? 1.3 : 1 / 1.3);
    ms.push_back(Frame(image, scene, &stats));
    runs = std::max(runs, stats.runs);
  }
  Report("zoom in/out by 1.3x per frame", ms, runs);
  if (s.windowed()) BenchWindow(s, 1'000'000, frames, image, scene, layout);
  std::printf("  peak RSS %ld MB\n", PeakRssMb());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint64_t> sizes = {1'000'000, 10'000'000};
  int ranks = 8, frames = 120, w = 1920, h = 1080;
  ncclrr::viewer::SessionOptions options;
  std::string base = (std::filesystem::temp_directory_path() / "ncclrr-bench-viewer").string();
  try {
    ncclrr::Args args("bench-viewer", argc, argv);
    args.Option("--calls").Option("--ranks").Option("--frames").Option("--size").Option("--dir");
    args.Option("--max-calls");
    args.Parse();
    if (auto v = args.Get("--calls")) {
      sizes.clear();
      for (const char* p = v->c_str(); *p;) {
        char* end = nullptr;
        sizes.push_back(std::strtoull(p, &end, 10));
        if (end == p) throw ncclrr::UsageError("--calls takes N[,N...], got '" + *v + "'");
        p = *end == ',' ? end + 1 : end;
      }
    }
    ranks = static_cast<int>(args.GetInt("--ranks", ranks));
    frames = static_cast<int>(args.GetInt("--frames", frames));
    if (auto v = args.Get("--size"); v && std::sscanf(v->c_str(), "%dx%d", &w, &h) != 2)
      throw ncclrr::UsageError("--size takes WxH, got '" + *v + "'");
    base = args.GetOr("--dir", base);
    options.max_calls = static_cast<uint64_t>(args.GetInt("--max-calls", 0));
  } catch (const ncclrr::UsageError& e) {
    std::fprintf(stderr,
                 "bench-viewer: %s\nusage: bench-viewer [--calls N[,N...]] [--ranks R] "
                 "[--frames F] [--size WxH] [--dir BASE] [--max-calls N]\n",
                 e.what());
    return 2;
  }
  if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QGuiApplication app(argc, argv);
  for (uint64_t n : sizes) {
    std::printf("== %llu calls, %d ranks, frames %dx%d\n", static_cast<unsigned long long>(n),
                ranks, w, h);
    Bench(EnsureTrace(base, n, ranks), frames, w, h, options);
  }
  return 0;
}
