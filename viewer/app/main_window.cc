#include "main_window.h"

#include <QDockWidget>
#include <QMessageBox>
#include <QPointer>
#include <QStatusBar>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>
#include <chrono>

#include "legend_widget.h"
#include "models/time_axis.h"

namespace ncclrr::viewer {

constexpr quint64 kNoCall = ~quint64{0};

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("ncclrr viewer");
  setAcceptDrops(true);
  loader_ = new SessionLoader(this);

  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  filter_ = new FilterBar(central);
  layout->addWidget(filter_);
  layout->addWidget(new LegendWidget(central));
  vsplit_ = new QSplitter(Qt::Vertical, central);
  timeline_ = new TimelineWidget(vsplit_);
  hsplit_ = new QSplitter(Qt::Horizontal, vsplit_);
  alignment_ = new AlignmentView(hsplit_);
  details_ = new DetailsView(hsplit_);
  hsplit_->addWidget(alignment_);
  hsplit_->addWidget(details_);
  hsplit_->setStretchFactor(0, 3);
  hsplit_->setStretchFactor(1, 2);
  vsplit_->addWidget(timeline_);
  vsplit_->addWidget(hsplit_);
  vsplit_->setStretchFactor(0, 3);
  vsplit_->setStretchFactor(1, 2);
  layout->addWidget(vsplit_, 1);
  setCentralWidget(central);

  auto* dock = new QDockWidget("Findings", this);
  dock->setObjectName("findings");
  dock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  findings_ = new FindingsView(dock);
  dock->setWidget(findings_);
  addDockWidget(Qt::LeftDockWidgetArea, dock);
  resizeDocks({dock}, {470}, Qt::Horizontal);

  progress_ = new QProgressBar(this);
  progress_->setRange(0, 100);
  progress_->setMaximumWidth(220);
  progress_->hide();
  status_ = new QLabel(this);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  ShowStatus("Open a trace directory (File \u2192 Open, or drop it here).");

  BuildMenus();

  connect(loader_, &SessionLoader::progress, this, [this](int percent, const QString& what) {
    progress_->show();
    progress_->setValue(percent);
    ShowStatus("Loading: " + what);
  });
  connect(loader_, &SessionLoader::timelineReady, this,
          [this](std::shared_ptr<const TraceSession> s) { SetSession(std::move(s)); });
  connect(loader_, &SessionLoader::loaded, this, [this](std::shared_ptr<const TraceSession> s) {
    progress_->hide();
    AddRecent(QString::fromStdString(s->path()));
    if (session_ && !session_->checked() && &session_->model() == &s->model())
      ShowFindings(std::move(s));
    else if (session_ && s->windowed() && session_->windowed() == s->windowed())
      ShowWindow(TraceSession::WithFindings(*session_, s->windowed_findings()));
    else
      SetSession(std::move(s));
  });
  window_timer_ = new QTimer(this);
  window_timer_->setSingleShot(true);
  window_timer_->setInterval(120);
  connect(window_timer_, &QTimer::timeout, this, &MainWindow::LoadWindowForView);
  connect(timeline_, &TimelineWidget::viewChanged, this, [this] {
    if (session_ && session_->windowed()) window_timer_->start();
  });
  connect(loader_, &SessionLoader::failed, this, [this](const QString& path, const QString& text) {
    progress_->hide();
    ShowError(path, text);
  });
  connect(timeline_, &TimelineWidget::callSelected, this,
          [this](quint64 key) { OnCallSelected(key, timeline_); });
  connect(alignment_, &AlignmentView::callSelected, this,
          [this](quint64 key) { OnCallSelected(key, alignment_); });
  connect(findings_, &FindingsView::findingSelected, this, &MainWindow::OnFinding);
  connect(filter_, &FilterBar::changed, this, &MainWindow::ApplyFilter);
  connect(filter_, &FilterBar::seqRequested, this, &MainWindow::OnSeq);
  connect(filter_, &FilterBar::problem, this, &MainWindow::ShowStatus);
}

void MainWindow::OpenPath(const QString& path) {
  current_path_ = path;
  last_error_.clear();
  progress_->setValue(0);
  progress_->show();
  ShowStatus("Loading " + path);
  loader_->Start(path);
}

void MainWindow::SetSession(std::shared_ptr<const TraceSession> session) {
  session_ = std::move(session);
  if (!session_) return;
  setWindowTitle("ncclrr viewer \u2014 " + QString::fromStdString(session_->path()));
  filter_->SetSession(session_);
  timeline_->SetSession(session_);
  alignment_->SetSession(session_);
  findings_->SetSession(session_);
  details_->Show(session_, std::nullopt);
  ShowSessionStatus();
}

void MainWindow::ShowFindings(std::shared_ptr<const TraceSession> session) {
  session_ = std::move(session);
  filter_->UpdateSession(session_);
  timeline_->UpdateSession(session_);
  const int comm = alignment_->comm();
  alignment_->SetSession(session_);
  if (comm >= 0) alignment_->SetComm(comm);
  findings_->SetSession(session_);
  details_->Show(session_, timeline_->scene().selected);
  if (!filter_->Filter().empty()) ApplyFilter();  // the filtered index takes the marks too
  ShowSessionStatus();
}

void MainWindow::ReadCallsInView() {
  window_synchronous_ = true;
  LoadWindowForView();
  window_synchronous_ = false;
}

void MainWindow::LoadWindowForView() {
  if (!session_ || !session_->windowed()) return;
  const TimeAxis& a = timeline_->axis();
  const int64_t begin = a.origin_ns, end = a.end_ns();
  auto covers = [&](const std::optional<std::pair<int64_t, int64_t>>& w) {
    return w && begin >= w->first && end <= w->second;
  };
  if (covers(session_->window()) || covers(window_asked_)) return;
  // At most window_calls() in view (about a second to read and index on 2 cores), with as many
  // again around them for panning.
  const WindowedTrace& t = *session_->windowed();
  if (t.CallsIn(begin, end) > t.window_calls()) return;  // buckets tell as much as pixels can
  const int64_t span = end - begin;
  std::pair<int64_t, int64_t> w{begin - span, end + span};
  if (t.CallsIn(w.first, w.second) > 2 * t.window_calls()) w = {begin, end};
  LoadWindow(w);
}

void MainWindow::LoadWindow(std::optional<std::pair<int64_t, int64_t>> window) {
  if (window_synchronous_) {
    auto r = TraceSession::LoadWindow(*session_, window);
    if (r.ok()) ShowWindow(r.value());
    return;
  }
  window_asked_ = window;
  const quint64 generation = ++window_generation_;
  ShowStatus("Reading the calls in view\u2026");
  QPointer<MainWindow> self(this);
  auto shown = session_;
  QThread* worker = QThread::create([self, shown, window, generation] {
    auto r = TraceSession::LoadWindow(*shown, window);
    QMetaObject::invokeMethod(
        self.data(),
        [self, r, generation] {
          if (!self || generation != self->window_generation_) return;
          self->window_asked_.reset();
          if (!r.ok()) {
            self->ShowStatus(QString::fromStdString("Could not read the calls in view: " +
                                                    r.status().message()));
            return;
          }
          // The findings arrived while the window was read: put them on it.
          std::shared_ptr<const TraceSession> read = r.value();
          if (self->session_->checked() && !read->checked())
            self->ShowWindow(
                TraceSession::WithFindings(*read, self->session_->windowed_findings()));
          else
            self->ShowWindow(std::move(read));
        },
        Qt::QueuedConnection);
  });
  worker->setParent(loader_);  // the loader waits for its child threads on exit
  connect(worker, &QThread::finished, worker, &QObject::deleteLater);
  worker->start();
}

void MainWindow::ShowWindow(std::shared_ptr<const TraceSession> session) {
  session_ = std::move(session);
  filter_->UpdateSession(session_);
  timeline_->ReplaceSession(session_);
  const int comm = alignment_->comm();
  alignment_->SetSession(session_);
  if (comm >= 0) alignment_->SetComm(comm);
  findings_->SetSession(session_);
  details_->Show(session_, std::nullopt);
  if (!filter_->Filter().empty()) ApplyFilter();
  ShowSessionStatus();
  if (pending_finding_ >= 0) {  // its calls may be read now
    const int f = pending_finding_;
    pending_finding_ = -1;
    findings_->SelectFinding(f);
  }
}

void MainWindow::ShowSessionStatus() {
  const auto& r = session_->report();
  const auto& t = session_->timings();
  const QString head = QString("%1 calls in %2 files \u00b7 %3 communicators \u00b7 ")
                           .arg(session_->model().total_calls())
                           .arg(session_->model().files().size())
                           .arg(session_->model().comms().size());
  if (const auto& w = session_->windowed()) {
    const QString lod =
        QString("%1 calls in %2 files, shown at levels of detail (too many to hold): ")
            .arg(w->calls())
            .arg(w->files()) +
        (session_->window() ? QString("each call of the window read, boxes of many calls elsewhere")
                            : QString("boxes of many calls; zoom in to read each call")) +
        QString(" \u00b7 ");
    ShowStatus(lod +
               (session_->checked()
                    ? QString("%1 findings, %2 notes").arg(r.findings.size()).arg(r.notes.size())
                    : QString("checking in passes\u2026")));
    return;
  }
  if (!session_->checked()) {
    ShowStatus(head + QString("checking\u2026 \u00b7 read %1 s, index %2 s")
                          .arg(t.read_s, 0, 'f', 2)
                          .arg(t.index_s, 0, 'f', 2));
    return;
  }
  ShowStatus(head + QString("%1 findings, %2 notes \u00b7 read %3 s, check %4 s, index %5 s")
                        .arg(r.findings.size())
                        .arg(r.notes.size())
                        .arg(t.read_s, 0, 'f', 2)
                        .arg(t.check_s, 0, 'f', 2)
                        .arg(t.index_s, 0, 'f', 2));
}

bool MainWindow::SelectFinding(int finding) { return findings_->SelectFinding(finding); }

void MainWindow::EmphasizeAlignment() {
  const int h = vsplit_->height();
  vsplit_->setSizes({h * 2 / 5, h * 3 / 5});
  const int w = hsplit_->width();
  hsplit_->setSizes({w * 3 / 4, w / 4});
}

void MainWindow::ShowError(const QString& path, const QString& text) {
  last_error_ = text;
  ShowStatus("Could not open " + path);
  auto* box =
      new QMessageBox(QMessageBox::Critical, "Cannot open trace", text, QMessageBox::Ok, this);
  box->setObjectName("load-error");
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();  // window-modal, not a nested event loop: tests and the loader keep running
}

void MainWindow::ShowStatus(const QString& text) { status_->setText(text); }

void MainWindow::OnCallSelected(quint64 key, QObject* source) {
  if (!session_) return;
  if (key == kNoCall) {
    details_->Show(session_, std::nullopt);
    return;
  }
  const CallRef call = CallFromKey(key);
  if (source != timeline_) timeline_->SelectCall(call, true);
  if (source != alignment_) alignment_->ShowCall(call);
  details_->Show(session_, call);
}

void MainWindow::OnFinding(int finding) {
  if (!session_) return;
  const auto calls = session_->CallsOfFinding(static_cast<size_t>(finding));
  for (CallRef c : calls)  // shown at levels of detail: select it again once its calls are read
    if (session_->BucketAt(c)) pending_finding_ = finding;
  timeline_->SetHighlighted(calls);
  if (calls.empty()) {
    const analysis::Finding& f = session_->report().findings[finding];
    if (f.comm != 0 && f.seq) {
      alignment_->SetComm(static_cast<int>(f.comm_index));
      alignment_->ShowSeq(*f.seq);
    }
    return;
  }
  timeline_->ShowCalls(calls);
  timeline_->SelectCall(calls.front(), false);
  alignment_->ShowCall(calls.front(), calls);
  details_->Show(session_, calls.front());
}

void MainWindow::OnSeq(quint64 seq) {
  if (!session_ || session_->model().comms().empty()) return;
  const int ci = std::max(alignment_->comm(), 0);
  const analysis::CommModel& comm = session_->model().comms()[ci];
  std::vector<CallRef> calls;
  for (const analysis::RankView& rv : comm.ranks)
    if (const analysis::CollectiveSlot* s = rv.AtSeq(seq)) calls.push_back(s->call);
  if (calls.empty()) {
    ShowStatus(QString("Communicator %1 has no seq %2: its ranks issued %3 collectives.")
                   .arg(ci)
                   .arg(seq)
                   .arg(comm.max_issued()));
    return;
  }
  timeline_->SetHighlighted(calls);
  timeline_->ShowCalls(calls);
  timeline_->SelectCall(calls.front(), false);
  alignment_->ShowCall(calls.front(), calls);
  details_->Show(session_, calls.front());
}

void MainWindow::ApplyFilter() {
  if (!session_) return;
  const TimelineFilter f = filter_->Filter();
  const quint64 generation = ++filter_generation_;
  if (f.empty()) {
    timeline_->SetIndex(std::shared_ptr<const TimelineIndex>(session_, &session_->timeline()));
    timeline_->Fit();
    ShowStatus("Showing every call.");
    return;
  }
  // Rebuilding the index is one pass over the calls: instant for small traces, about a second
  // for 10 M calls, so big traces filter on a worker and the view stays responsive meanwhile.
  auto session = session_;
  auto build = [session, f] {
    const auto t0 = std::chrono::steady_clock::now();
    auto index = std::make_shared<const TimelineIndex>(TimelineIndex::Build(
        session->model(), session->marks(), f, session->timeline().origin_ns()));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return std::make_pair(std::move(index), ms);
  };
  auto show = [this, f, generation](std::shared_ptr<const TimelineIndex> index, double ms) {
    if (generation != filter_generation_) return;  // a newer filter was chosen meanwhile
    const uint64_t shown = index->boxes;
    timeline_->SetIndex(std::move(index));
    if (f.window)
      timeline_->FitRange(f.window->first, f.window->second);
    else
      timeline_->Fit();
    if (f.comm) alignment_->SetComm(static_cast<int>(*f.comm));
    ShowStatus(
        QString("Filter: %1 calls shown (filtered in %2 ms).").arg(shown).arg(ms, 0, 'f', 0));
  };
  constexpr uint64_t kFilterInBackgroundAbove = 2'000'000;
  if (session_->model().total_calls() <= kFilterInBackgroundAbove) {
    auto [index, ms] = build();
    show(std::move(index), ms);
    return;
  }
  ShowStatus("Filtering\u2026");
  QPointer<MainWindow> self(this);
  QThread* worker = QThread::create([self, build, show] {
    auto result = build();
    QMetaObject::invokeMethod(
        self.data(),
        [self, show, result] {
          if (self) show(result.first, result.second);
        },
        Qt::QueuedConnection);
  });
  worker->setParent(loader_);  // the loader waits for its child threads on exit
  connect(worker, &QThread::finished, worker, &QObject::deleteLater);
  worker->start();
}

}  // namespace ncclrr::viewer
