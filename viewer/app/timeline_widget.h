#pragma once
// The timeline widget: paints TimelineScene (models/timeline_painter.h) and turns mouse, wheel,
// pinch and keys into TimeAxis changes. Drag pans, wheel zooms at the cursor (Shift+wheel
// scrolls rows), right-drag or Shift+drag zooms to a box, double-click fits, a click selects a
// call (and toggles a host or device when on its label). Keys: +/- or W/S zoom, arrows or A/D
// pan, Up/Down scroll, F or Home fits, Esc clears the selection.
#include <QElapsedTimer>
#include <QScrollBar>
#include <QWidget>
#include <memory>
#include <optional>

#include "models/timeline_painter.h"

namespace ncclrr::viewer {

class TimelineWidget : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineWidget(QWidget* parent = nullptr);

  void SetSession(std::shared_ptr<const TraceSession> session);
  // The same trace with its findings (the check finished after the timeline was shown): the
  // view, rows and selection stay; the unfiltered index is the new session's.
  void UpdateSession(std::shared_ptr<const TraceSession> session);
  // Another composite of a trace shown at levels of detail (a window read): the view stays; the
  // selection, which named the old composite's calls, is cleared.
  void ReplaceSession(std::shared_ptr<const TraceSession> session);
  void SetIndex(std::shared_ptr<const TimelineIndex> index);  // after a filter change
  const TimeAxis& axis() const { return scene_.axis; }
  TimeAxis& axis() { return scene_.axis; }

  void Fit();
  void FitRange(int64_t begin, int64_t end);
  void ZoomBy(double factor);   // about the centre
  void PanBy(double fraction);  // of the width
  void SelectCall(std::optional<CallRef> call, bool center);
  void SetHighlighted(std::vector<CallRef> calls);
  // Zooms so that every call shows, scrolled into view vertically.
  void ShowCalls(const std::vector<CallRef>& calls);
  void CollapseAll(bool collapse);

  double last_frame_ms() const { return last_frame_ms_; }
  const TimelineScene& scene() const { return scene_; }

 Q_SIGNALS:
  void callSelected(quint64 call_key);  // CallKey() of the call; ~0 when cleared
  void viewChanged();

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  void leaveEvent(QEvent*) override;
  bool event(QEvent*) override;  // tooltips, pinch

 private:
  void Relayout();
  void UpdateScrollBar();
  double PlotX(double widget_x) const { return widget_x - scene_.geometry.label_width; }
  const DisplayRow* RowAtWidgetY(double y) const;
  std::optional<CallRef> CallAt(QPointF pos) const;
  void ToggleCollapseAt(QPointF pos);
  void ScrollRowIntoView(double content_y0, double content_y1);

  std::shared_ptr<const TraceSession> session_;
  std::shared_ptr<const TimelineIndex> index_;
  RowLayout layout_;
  CollapseState collapsed_;
  TimelineScene scene_;
  QScrollBar* vbar_ = nullptr;

  enum class Drag { kNone, kPan, kBox } drag_ = Drag::kNone;
  QPointF press_pos_, last_pos_;
  bool moved_ = false;
  bool fitted_ = false;  // showing the whole trace since the last Fit()
  double last_frame_ms_ = 0;
};

}  // namespace ncclrr::viewer
