#include "timeline_widget.h"

#include <QGestureEvent>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QNativeGestureEvent>
#include <QPainter>
#include <QPinchGesture>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace ncclrr::viewer {
namespace {

constexpr double kWheelZoomPerNotch = 1.25;
constexpr quint64 kNoCall = ~quint64{0};

}  // namespace

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setMinimumSize(400, 160);
  grabGesture(Qt::PinchGesture);
  vbar_ = new QScrollBar(Qt::Vertical, this);
  vbar_->hide();
  connect(vbar_, &QScrollBar::valueChanged, this, [this](int v) {
    scene_.scroll_y = v;
    update();
  });
}

void TimelineWidget::SetSession(std::shared_ptr<const TraceSession> session) {
  session_ = std::move(session);
  collapsed_ = {};
  scene_.session = session_.get();
  scene_.selected.reset();
  scene_.hovered.reset();
  scene_.highlighted.clear();
  index_.reset();
  if (session_)  // the unfiltered index lives in the session; share it without copying
    index_ = std::shared_ptr<const TimelineIndex>(session_, &session_->timeline());
  Relayout();
  Fit();
}

void TimelineWidget::UpdateSession(std::shared_ptr<const TraceSession> session) {
  const bool unfiltered = session_ && index_.get() == &session_->timeline();
  session_ = std::move(session);
  scene_.session = session_.get();
  if (unfiltered) index_ = std::shared_ptr<const TimelineIndex>(session_, &session_->timeline());
  scene_.index = index_.get();
  update();
}

void TimelineWidget::ReplaceSession(std::shared_ptr<const TraceSession> session) {
  session_ = std::move(session);
  scene_.session = session_.get();
  scene_.selected.reset();
  scene_.hovered.reset();
  scene_.highlighted.clear();
  index_.reset();
  if (session_) index_ = std::shared_ptr<const TimelineIndex>(session_, &session_->timeline());
  Relayout();
  update();
}

void TimelineWidget::SetIndex(std::shared_ptr<const TimelineIndex> index) {
  index_ = std::move(index);
  Relayout();
  update();
}

void TimelineWidget::Relayout() {
  scene_.index = index_.get();
  // Few ranks get taller rows (up to twice the default), so a small trace fills the view.
  scene_.geometry.lane_height = TimelineGeometry{}.lane_height;
  layout_ = index_ ? LayOutRows(*index_, collapsed_, scene_.geometry) : RowLayout{};
  const double visible = height() - scene_.geometry.ruler_height;
  if (index_ && layout_.height > 0 && layout_.height < visible) {
    size_t lanes = 0;
    double fixed = 0;
    for (const DisplayRow& r : layout_.rows) {
      if (r.kind == DisplayRow::kLane && r.height == scene_.geometry.lane_height)
        ++lanes;
      else
        fixed += r.height;
    }
    if (lanes > 0)
      scene_.geometry.lane_height =
          std::clamp((visible - fixed) / static_cast<double>(lanes), scene_.geometry.lane_height,
                     2 * scene_.geometry.lane_height);
    layout_ = LayOutRows(*index_, collapsed_, scene_.geometry);
  }
  scene_.layout = &layout_;
  UpdateScrollBar();
}

void TimelineWidget::UpdateScrollBar() {
  const double visible = height() - scene_.geometry.ruler_height;
  const int max = static_cast<int>(std::max(0.0, layout_.height - visible));
  vbar_->setRange(0, max);
  vbar_->setPageStep(static_cast<int>(std::max(visible, 1.0)));
  vbar_->setSingleStep(static_cast<int>(scene_.geometry.lane_height));
  vbar_->setVisible(max > 0);
  vbar_->setGeometry(width() - vbar_->sizeHint().width(),
                     static_cast<int>(scene_.geometry.ruler_height), vbar_->sizeHint().width(),
                     static_cast<int>(visible));
  scene_.scroll_y = std::clamp(scene_.scroll_y, 0.0, static_cast<double>(max));
  vbar_->setValue(static_cast<int>(scene_.scroll_y));
}

void TimelineWidget::Fit() {
  if (!index_) return;
  if (index_->boxes == 0) {
    scene_.axis.Fit(0, 1);
  } else {
    scene_.axis.Fit(index_->begin_ns, index_->end_ns);
  }
  fitted_ = true;
  update();
  Q_EMIT viewChanged();
}

void TimelineWidget::FitRange(int64_t begin, int64_t end) {
  fitted_ = false;
  scene_.axis.Fit(begin, end);
  update();
  Q_EMIT viewChanged();
}

void TimelineWidget::ZoomBy(double factor) {
  fitted_ = false;
  scene_.axis.ZoomAt(scene_.axis.width_px / 2, factor);
  update();
  Q_EMIT viewChanged();
}

void TimelineWidget::PanBy(double fraction) {
  fitted_ = false;
  scene_.axis.PanPixels(fraction * scene_.axis.width_px);
  update();
  Q_EMIT viewChanged();
}

void TimelineWidget::SelectCall(std::optional<CallRef> call, bool center) {
  scene_.selected = call;
  if (call && center && session_ && index_) {
    fitted_ = false;
    if (auto box = index_->Locate(session_->model(), *call)) {
      const Lane& lane = index_->lanes[box->lane];
      scene_.axis.CenterOn(lane.boxes.begin[box->pos], lane.boxes.end[box->pos]);
      const int row = layout_.RowOfLane(box->lane);
      if (row >= 0)
        ScrollRowIntoView(layout_.rows[row].y, layout_.rows[row].y + layout_.rows[row].height);
    }
  }
  update();
}

void TimelineWidget::SetHighlighted(std::vector<CallRef> calls) {
  scene_.highlighted = std::move(calls);
  update();
}

void TimelineWidget::ShowCalls(const std::vector<CallRef>& calls) {
  if (!session_ || !index_) return;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  double y0 = INFINITY, y1 = -INFINITY;
  for (CallRef c : calls) {
    auto box = index_->Locate(session_->model(), c);
    if (!box) continue;
    const Lane& lane = index_->lanes[box->lane];
    lo = std::min(lo, lane.boxes.begin[box->pos]);
    hi = std::max(hi, lane.boxes.end[box->pos]);
    const int row = layout_.RowOfLane(box->lane);
    if (row >= 0) {
      y0 = std::min(y0, layout_.rows[row].y);
      y1 = std::max(y1, layout_.rows[row].y + layout_.rows[row].height);
    }
  }
  if (lo > hi) return;
  // Enough context around the calls to see their neighbours, a few call widths on each side.
  const int64_t span = std::max<int64_t>(hi - lo, 1);
  fitted_ = false;
  scene_.axis.Fit(lo - span * 2, hi + span * 2);
  if (y0 <= y1) ScrollRowIntoView(y0, y1);
  update();
  Q_EMIT viewChanged();
}

void TimelineWidget::CollapseAll(bool collapse) {
  collapsed_ = {};
  if (collapse && index_)
    for (const DeviceRow& d : index_->devices) collapsed_.devices.insert({d.file, d.device});
  Relayout();
  update();
}

void TimelineWidget::ScrollRowIntoView(double content_y0, double content_y1) {
  const double visible = height() - scene_.geometry.ruler_height;
  if (content_y0 >= scene_.scroll_y && content_y1 <= scene_.scroll_y + visible) return;
  double target = content_y0 - visible / 3;
  if (content_y1 - content_y0 > visible * 0.9) target = content_y0;
  vbar_->setValue(static_cast<int>(std::max(0.0, target)));
  scene_.scroll_y = vbar_->value();
}

void TimelineWidget::paintEvent(QPaintEvent*) {
  QElapsedTimer timer;
  timer.start();
  QPainter p(this);
  scene_.width = width() - (vbar_->isVisible() ? vbar_->width() : 0);
  scene_.height = height();
  PaintTimeline(p, scene_);
  last_frame_ms_ = static_cast<double>(timer.nsecsElapsed()) / 1e6;
}

void TimelineWidget::resizeEvent(QResizeEvent*) {
  scene_.axis.Resize(
      std::max(1.0, width() - scene_.geometry.label_width - vbar_->sizeHint().width()));
  Relayout();
  if (fitted_) Fit();  // still showing everything: keep showing everything
}

const DisplayRow* TimelineWidget::RowAtWidgetY(double y) const {
  const int r = layout_.RowAt(y - scene_.geometry.ruler_height + scene_.scroll_y);
  return r < 0 ? nullptr : &layout_.rows[r];
}

std::optional<CallRef> TimelineWidget::CallAt(QPointF pos) const {
  if (!index_ || pos.x() < scene_.geometry.label_width || pos.y() < scene_.geometry.ruler_height)
    return std::nullopt;
  const DisplayRow* row = RowAtWidgetY(pos.y());
  if (!row || row->lanes.empty()) return std::nullopt;
  auto box = HitTest(*index_, *row, scene_.axis, PlotX(pos.x()));
  if (!box) return std::nullopt;
  return index_->CallAt(*box);
}

void TimelineWidget::ToggleCollapseAt(QPointF pos) {
  const DisplayRow* row = RowAtWidgetY(pos.y());
  if (!row || !index_) return;
  if (row->kind == DisplayRow::kHost) {
    const std::string& host = index_->hosts[row->host].host;
    if (!collapsed_.hosts.erase(host)) collapsed_.hosts.insert(host);
  } else if (row->first_of_device && row->device >= 0) {
    const DeviceRow& d = index_->devices[row->device];
    if (d.lanes.size() < 2) return;
    if (!collapsed_.devices.erase({d.file, d.device}))
      collapsed_.devices.insert({d.file, d.device});
  }
  Relayout();
  update();
}

void TimelineWidget::mousePressEvent(QMouseEvent* e) {
  press_pos_ = last_pos_ = e->position();
  moved_ = false;
  const bool box = e->button() == Qt::RightButton ||
                   (e->button() == Qt::LeftButton && (e->modifiers() & Qt::ShiftModifier));
  drag_ = box ? Drag::kBox : e->button() == Qt::LeftButton ? Drag::kPan : Drag::kNone;
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* e) {
  const QPointF pos = e->position();
  if (drag_ == Drag::kNone) {
    const auto hovered = CallAt(pos);
    if (hovered != scene_.hovered) {
      scene_.hovered = hovered;
      update();
    }
    return;
  }
  if ((pos - press_pos_).manhattanLength() > 3) moved_ = true;
  if (drag_ == Drag::kPan && moved_) {
    fitted_ = false;
    scene_.axis.PanPixels(last_pos_.x() - pos.x());
    vbar_->setValue(vbar_->value() + static_cast<int>(last_pos_.y() - pos.y()));
    Q_EMIT viewChanged();
  }
  last_pos_ = pos;
  update();
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* e) {
  const QPointF pos = e->position();
  if (drag_ == Drag::kBox && moved_) {
    const double a = PlotX(std::min(press_pos_.x(), pos.x()));
    const double b = PlotX(std::max(press_pos_.x(), pos.x()));
    if (b - a >= 3) FitRange(scene_.axis.ToTime(a), scene_.axis.ToTime(b));
  } else if (drag_ == Drag::kPan && !moved_) {
    if (pos.x() < scene_.geometry.label_width) {
      ToggleCollapseAt(pos);
    } else {
      const auto call = CallAt(pos);
      scene_.selected = call;
      Q_EMIT callSelected(call ? CallKey(*call) : kNoCall);
    }
  }
  drag_ = Drag::kNone;
  update();
}

void TimelineWidget::mouseDoubleClickEvent(QMouseEvent* e) {
  if (auto call = CallAt(e->position()); call && index_ && session_) {
    if (auto box = index_->Locate(session_->model(), *call)) {
      const Lane& lane = index_->lanes[box->lane];
      const int64_t b = lane.boxes.begin[box->pos], en = lane.boxes.end[box->pos];
      FitRange(b - (en - b), en + (en - b));
      return;
    }
  }
  Fit();
}

void TimelineWidget::wheelEvent(QWheelEvent* e) {
  const QPoint delta = e->angleDelta();
  if (!(e->modifiers() & Qt::ShiftModifier)) fitted_ = false;
  if (e->modifiers() & Qt::ShiftModifier) {
    vbar_->setValue(vbar_->value() - delta.y() / 2);
  } else if (std::abs(delta.x()) > std::abs(delta.y())) {
    scene_.axis.PanPixels(-delta.x() / 2.0);
  } else if (delta.y() != 0) {
    const double factor = std::pow(kWheelZoomPerNotch, delta.y() / 120.0);
    scene_.axis.ZoomAt(std::max(0.0, PlotX(e->position().x())), factor);
  }
  e->accept();
  update();
  Q_EMIT viewChanged();
}

void TimelineWidget::keyPressEvent(QKeyEvent* e) {
  switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
    case Qt::Key_W:
      ZoomBy(1.5);
      break;
    case Qt::Key_Minus:
    case Qt::Key_S:
      ZoomBy(1 / 1.5);
      break;
    case Qt::Key_Left:
    case Qt::Key_A:
      PanBy(-0.2);
      break;
    case Qt::Key_Right:
    case Qt::Key_D:
      PanBy(0.2);
      break;
    case Qt::Key_Up:
      vbar_->setValue(vbar_->value() - vbar_->singleStep());
      break;
    case Qt::Key_Down:
      vbar_->setValue(vbar_->value() + vbar_->singleStep());
      break;
    case Qt::Key_F:
    case Qt::Key_Home:
    case Qt::Key_0:
      Fit();
      break;
    case Qt::Key_Escape:
      scene_.selected.reset();
      scene_.highlighted.clear();
      Q_EMIT callSelected(kNoCall);
      update();
      break;
    default:
      QWidget::keyPressEvent(e);
  }
}

void TimelineWidget::leaveEvent(QEvent*) {
  if (scene_.hovered) {
    scene_.hovered.reset();
    update();
  }
}

bool TimelineWidget::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip && session_) {
    auto* help = static_cast<QHelpEvent*>(e);
    if (auto call = CallAt(help->pos())) {
      QToolTip::showText(help->globalPos(), QString::fromStdString(session_->CallTip(*call)), this);
    } else {
      QToolTip::hideText();
    }
    return true;
  }
  if (e->type() == QEvent::NativeGesture) {  // trackpad pinch
    auto* g = static_cast<QNativeGestureEvent*>(e);
    if (g->gestureType() == Qt::ZoomNativeGesture) {
      fitted_ = false;
      scene_.axis.ZoomAt(PlotX(g->position().x()), 1 + g->value());
      update();
      return true;
    }
  }
  if (e->type() == QEvent::Gesture) {  // touch pinch
    auto* g = static_cast<QGestureEvent*>(e);
    if (auto* pinch = static_cast<QPinchGesture*>(g->gesture(Qt::PinchGesture))) {
      fitted_ = false;
      const QPointF c = mapFromGlobal(pinch->centerPoint());
      scene_.axis.ZoomAt(PlotX(c.x()), pinch->scaleFactor());
      update();
      return true;
    }
  }
  return QWidget::event(e);
}

}  // namespace ncclrr::viewer
