#pragma once
// The main window: filter bar and legend above the timeline; the alignment view and the call
// details below it; the findings panel docked on the left. Selections travel between the views
// here: a call selected anywhere is centred in the timeline, shown in the alignment view and
// detailed; a finding selects and centres all its calls.
#include <QLabel>
#include <QMainWindow>
#include <QMenu>
#include <QProgressBar>
#include <QSplitter>
#include <QTimer>
#include <memory>

#include "alignment_view.h"
#include "details_view.h"
#include "filter_bar.h"
#include "findings_view.h"
#include "session_loader.h"
#include "timeline_widget.h"

namespace ncclrr::viewer {

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  // Loads in the background (progress in the status bar; errors as a dialog).
  void OpenPath(const QString& path);
  // Reads the open trace again (F5): a running job's directory shows its latest state.
  void Reload();
  // Shows an already loaded session (screenshots and tests load synchronously).
  void SetSession(std::shared_ptr<const TraceSession> session);
  bool SelectFinding(int finding);
  // Gives the alignment view most of the window (screenshots of the alignment).
  void EmphasizeAlignment();
  // A trace shown at levels of detail: reads the calls in view now, on this thread, when the
  // view holds few enough (screenshots; the window does it in the background as views change).
  void ReadCallsInView();

  const std::shared_ptr<const TraceSession>& session() const { return session_; }
  const QString& last_error() const { return last_error_; }
  SessionLoader* loader() const { return loader_; }
  TimelineWidget* timeline() const { return timeline_; }
  AlignmentView* alignment() const { return alignment_; }
  FindingsView* findings() const { return findings_; }
  DetailsView* details() const { return details_; }

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void BuildMenus();
  void RefreshRecentMenu();
  void AddRecent(const QString& path);
  void ShowError(const QString& path, const QString& text);
  void OnCallSelected(quint64 key, QObject* source);
  void OnFinding(int finding);
  void OnSeq(quint64 seq);
  void ApplyFilter();
  void ShowStatus(const QString& text);
  // The findings of the trace already shown arrived (the check ran after the timeline).
  void ShowFindings(std::shared_ptr<const TraceSession> session);
  // A trace shown at levels of detail: reads the real calls of the view when it holds few
  // enough of them (a worker builds the session; the newest request wins).
  void LoadWindowForView();
  void LoadWindow(std::optional<std::pair<int64_t, int64_t>> window);
  void ShowWindow(std::shared_ptr<const TraceSession> session);
  void ShowSessionStatus();

  std::shared_ptr<const TraceSession> session_;
  SessionLoader* loader_ = nullptr;
  QString current_path_;  // the trace last opened
  FilterBar* filter_ = nullptr;
  TimelineWidget* timeline_ = nullptr;
  AlignmentView* alignment_ = nullptr;
  FindingsView* findings_ = nullptr;
  DetailsView* details_ = nullptr;
  QSplitter* vsplit_ = nullptr;
  QSplitter* hsplit_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* status_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QString last_error_;
  quint64 filter_generation_ = 0;
  quint64 window_generation_ = 0;  // the newest window asked for
  std::optional<std::pair<int64_t, int64_t>> window_asked_;
  QTimer* window_timer_ = nullptr;  // waits for the view to settle before reading
  int pending_finding_ = -1;        // selected before its calls were read
  bool window_synchronous_ =
      false;  // ReadCallsInView  // the newest filter; older results are dropped
};

}  // namespace ncclrr::viewer
