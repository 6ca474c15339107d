// ncclrr-viewer [DIR] [--screenshot FILE.png] [--select-finding N] [--view timeline|alignment]
//               [--size WxH]
// With --screenshot the trace is loaded in the foreground, the window is rendered offscreen
// (QT_QPA_PLATFORM=offscreen unless set) and written to FILE.png, and the program exits: 0 on
// success, 2 when the trace cannot be opened (the error dialog's text goes to stderr) or the
// arguments are wrong.
#include <QApplication>
#include <QImage>
#include <QTimer>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "main_window.h"
#include "models/path_text.h"
#include "ncclrr/base/args.h"

namespace {

struct Options {
  QString dir;
  QString screenshot;
  int finding = -1;
  bool alignment = false;
  int width = 1800, height = 1100;
  ncclrr::viewer::SessionOptions session;
};

constexpr char kUsage[] =
    "usage: ncclrr-viewer [DIR] [--screenshot FILE.png] [--select-finding N]\n"
    "                     [--view timeline|alignment] [--size WxH] [--max-calls N]\n"
    "  DIR                 a trace directory (ncclrr record -o DIR) or one .ncclrr file\n"
    "  --screenshot FILE   render the window offscreen into FILE (PNG) and exit\n"
    "  --select-finding N  select finding N (0-based, in `ncclrr check` order) first\n"
    "  --view alignment    give the alignment view most of the window\n"
    "  --size WxH          window size for the screenshot (default 1800x1100)\n"
    "  --max-calls N       show traces of more calls at levels of detail, reading only\n"
    "                      the calls in view (default: what fits in the free memory)\n";

int Usage(const std::string& problem) {
  std::fprintf(stderr, "ncclrr-viewer: %s\n%s", problem.c_str(), kUsage);
  return 2;
}

// Parses argv before QApplication exists (it decides the platform plugin). Returns -1 to go on.
int Parse(int argc, char** argv, Options* o) {
  try {
    ncclrr::Args args("ncclrr-viewer", argc, argv);
    args.Flag("-h").Flag("--help");
    args.Option("--screenshot").Option("--select-finding").Option("--view").Option("--size");
    args.Option("--max-calls");
    args.Parse();
    if (args.Has("-h") || args.Has("--help")) {
      std::printf("%s", kUsage);
      return 0;
    }
    if (args.positional().size() > 1)
      return Usage("one trace at a time; got '" + args.positional()[0] + "' and '" +
                   args.positional()[1] + "'");
    if (!args.positional().empty())
      o->dir = ncclrr::viewer::PathFromBytes(args.positional()[0].c_str());
    if (auto v = args.Get("--screenshot")) o->screenshot = QString::fromStdString(*v);
    if (auto v = args.Get("--select-finding")) {
      char* end = nullptr;
      const long n = std::strtol(v->c_str(), &end, 10);
      if (v->empty() || *end || n < 0)
        return Usage("--select-finding needs a finding number (0, 1, ...)");
      o->finding = static_cast<int>(n);
    }
    if (auto v = args.Get("--view")) {
      if (*v != "timeline" && *v != "alignment") return Usage("--view takes timeline or alignment");
      o->alignment = *v == "alignment";
    }
    if (auto v = args.Get("--size")) {
      if (std::sscanf(v->c_str(), "%dx%d", &o->width, &o->height) != 2 || o->width < 400 ||
          o->height < 300)
        return Usage("--size takes WxH, at least 400x300, e.g. 1800x1100");
    }
    if (auto v = args.Get("--max-calls")) {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v->c_str(), &end, 10);
      if (v->empty() || *end || n == 0 || (*v)[0] == '-')
        return Usage("--max-calls needs a number of calls (1, 2, ...), got '" + *v + "'");
      o->session.max_calls = n;
    }
  } catch (const ncclrr::UsageError& e) {
    return Usage(e.what());
  }
  if (!o->screenshot.isEmpty() && o->dir.isEmpty()) return Usage("--screenshot needs a DIR");
  if (o->finding >= 0 && o->dir.isEmpty()) return Usage("--select-finding needs a DIR");
  return -1;
}

int Screenshot(ncclrr::viewer::MainWindow& w, const Options& o) {
  using ncclrr::viewer::TraceSession;
  const std::string dir = ncclrr::viewer::PathToBytes(o.dir);
  auto session = TraceSession::Load(dir, {}, {}, o.session);
  if (!session.ok()) {
    std::fprintf(stderr, "%s\n", ncclrr::viewer::LoadErrorText(dir, session.status()).c_str());
    return 2;
  }
  w.SetSession(session.value());
  QApplication::processEvents();
  if (o.alignment) w.EmphasizeAlignment();
  if (o.finding >= 0 && !w.SelectFinding(o.finding)) {
    std::fprintf(stderr, "ncclrr-viewer: --select-finding %d: the trace has %zu findings\n",
                 o.finding, session.value()->report().findings.size());
    return 2;
  }
  if (session.value()->windowed()) w.ReadCallsInView();  // the finding's calls, each drawn
  QApplication::processEvents();
  const QImage image = w.grab().toImage();
  if (!image.save(o.screenshot, "PNG")) {
    std::fprintf(stderr, "ncclrr-viewer: could not write '%s' (is the directory writable?)\n",
                 o.screenshot.toLocal8Bit().constData());
    return 2;
  }
  std::printf("wrote %s (%dx%d, %zu findings)\n", o.screenshot.toLocal8Bit().constData(),
              image.width(), image.height(), session.value()->report().findings.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (int rc = Parse(argc, argv, &o); rc >= 0) return rc;
  if (!o.screenshot.isEmpty() && !std::getenv("QT_QPA_PLATFORM"))
    setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QApplication app(argc, argv);
  QApplication::setApplicationName("ncclrr-viewer");
  ncclrr::viewer::MainWindow w;
  w.loader()->SetOptions(o.session);
  w.resize(o.width, o.height);
  if (!o.screenshot.isEmpty()) {
    w.show();
    return Screenshot(w, o);
  }
  w.show();
  if (!o.dir.isEmpty()) w.OpenPath(o.dir);
  if (o.finding >= 0) {
    QObject::connect(w.loader(), &ncclrr::viewer::SessionLoader::loaded, &w,
                     [&w, n = o.finding] { w.SelectFinding(n); });
  }
  return app.exec();
}
