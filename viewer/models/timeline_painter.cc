#include "models/timeline_painter.h"

#include <QFontMetricsF>
#include <algorithm>
#include <cmath>
#include <map>

#include "models/timeline_style.h"
#include "ncclrr/analysis/model.h"

namespace ncclrr::viewer {
namespace {

constexpr double kBoxTopPad = 3;
constexpr double kBoxBottomPad = 6;  // room for the group-scope bracket under the boxes
constexpr size_t kMaxLabelsPerFrame = 400;

QFont PixelFont(int px, bool bold = false) {
  QFont f;
  f.setPixelSize(px);
  f.setBold(bold);
  return f;
}

// Vertical extent of the boxes of a row.
std::pair<double, double> BoxBand(const TimelineScene& s, const DisplayRow& row, bool gpu_lane) {
  const double top = s.geometry.ruler_height + row.y - s.scroll_y;
  if (gpu_lane) return {top + 2, top + row.height - 2};
  return {top + kBoxTopPad, top + row.height - kBoxBottomPad};
}

class Painter {
 public:
  Painter(QPainter& p, const TimelineScene& s) : p_(p), s_(s), x0_(s.geometry.label_width) {}

  PaintStats Paint() {
    // Every pixel is filled once (ruler, label column, rows, the white below): at 1080p a
    // needless full-screen fill is a few ms of a 16 ms frame.
    ticks_ = s_.axis.Ticks(90);
    p_.save();
    p_.setClipRect(QRectF(x0_, s_.geometry.ruler_height, s_.width - x0_,
                          s_.height - s_.geometry.ruler_height));
    PaintRowBackgrounds();
    PaintGrid();
    PaintLinkUnderlays();
    for (const DisplayRow* row : visible_) PaintRowBoxes(*row);
    FlushFills();
    PaintEndMarkers();
    PaintLinks();
    PaintFindingLabels();
    p_.restore();
    PaintLabelColumn();
    PaintRuler();
    return stats_;
  }

 private:
  void PaintRowBackgrounds() {
    const double top_limit = s_.height;
    for (const DisplayRow& row : s_.layout->rows) {
      const double top = s_.geometry.ruler_height + row.y - s_.scroll_y;
      if (top + row.height < s_.geometry.ruler_height) continue;
      if (top > top_limit) break;
      visible_.push_back(&row);
      QColor bg = row.kind == DisplayRow::kHost ? QColor(0xe3, 0xe8, 0xef)
                  : (row.device % 2 == 0)       ? QColor(0xfb, 0xfb, 0xfc)
                                                : QColor(0xf1, 0xf4, 0xf8);
      p_.fillRect(QRectF(x0_, top, s_.width - x0_, row.height), bg);
      if (row.first_of_device || row.kind == DisplayRow::kHost)
        p_.fillRect(QRectF(x0_, top, s_.width - x0_, 1), QColor(0xd0, 0xd5, 0xdd));
    }
    stats_.rows = visible_.size();
    const double below = s_.geometry.ruler_height + s_.layout->height - s_.scroll_y;
    if (below < s_.height)
      p_.fillRect(QRectF(x0_, below, s_.width - x0_, s_.height - below), Qt::white);
  }

  void PaintGrid() {
    // One-pixel rectangles: the raster engine fills them faster than it strokes lines.
    const QColor grid(0xe2, 0xe5, 0xea);
    for (const RulerTick& t : ticks_)
      if (t.major)
        p_.fillRect(QRectF(std::floor(x0_ + t.x), s_.geometry.ruler_height, 1,
                           s_.height - s_.geometry.ruler_height),
                    grid);
  }

  void PaintRowBoxes(const DisplayRow& row) {
    for (uint32_t l : row.lanes) {
      const Lane& lane = s_.index->lanes[l];
      auto [y0, y1] = BoxBand(s_, row, lane.gpu && !row.collapsed);
      runs_.clear();
      ComputeRuns(lane.boxes, lane.look(), s_.axis, &runs_);
      stats_.runs += runs_.size();
      for (const PixelRun& r : runs_) {
        // A call a finding is about is never thinner than 3 px: thinner, at a fractional position,
        // it would be blended into its neighbours' colours and no pixel of it would be red.
        const double min_width = (r.flags & mark::kAnyFinding) ? 3.0 : 1.0;
        const double width = r.x1 - r.x0;
        const double widen = width < min_width ? (min_width - width) / 2 : 0;
        const QRectF rect(x0_ + r.x0 - widen, y0, std::max(width, min_width), y1 - y0);
        fills_[FillKey(r)].push_back(rect);
        if (r.flags) {
          if (RunHatch(r.flags).style() != Qt::NoBrush) hatches_[r.flags].push_back(rect);
          marked_runs_.push_back({l, r, rect});
        }
        if (!r.merged && rect.width() >= 4) borders_[FillKey(r)].push_back(rect);
        if (!r.merged && !r.flags && rect.width() >= 56 && !lane.gpu) TextInBox(lane, r, rect);
      }
      if (!lane.gpu) PaintGroupBrackets(lane, y1);
    }
  }

  static uint32_t FillKey(const PixelRun& r) {
    const uint8_t m = r.flags & (mark::kAnyFinding | mark::kInFlight);
    return (uint32_t{m} << 8) | r.style;
  }

  void PaintGroupBrackets(const Lane& lane, double box_bottom) {
    if (lane.groups.size() == 0) return;
    group_runs_.clear();
    ComputeRuns(lane.groups, {}, s_.axis, &group_runs_);
    const double y = box_bottom + 3;
    for (const PixelRun& r : group_runs_) {
      const double a = x0_ + r.x0, b = x0_ + std::max(r.x1, r.x0 + 1);
      brackets_.push_back(QLineF(a, y, b, y));
      brackets_.push_back(QLineF(a, y - 3, a, y));
      brackets_.push_back(QLineF(b, y - 3, b, y));
    }
  }

  void TextInBox(const Lane& lane, const PixelRun& r, const QRectF& rect) {
    const CallRecord& c = s_.session->model().call({lane.file, lane.call[r.first]});
    std::string text(ApiName(static_cast<Api>(c.api)));
    if (IsCollective(static_cast<Api>(c.api)) || IsP2p(static_cast<Api>(c.api)))
      text += " " + std::to_string(c.count);
    texts_.push_back({rect, QString::fromStdString(text), RunFill(r.style, r.flags)});
  }

  void FlushFills() {
    p_.setPen(Qt::NoPen);
    for (auto& [key, rects] : fills_) {
      p_.setBrush(RunFill(static_cast<uint8_t>(key & 0xff), static_cast<uint8_t>(key >> 8)));
      p_.drawRects(rects.data(), static_cast<int>(rects.size()));
      stats_.rects += rects.size();
    }
    for (auto& [marks, rects] : hatches_) {
      p_.setBrush(RunHatch(marks));
      p_.drawRects(rects.data(), static_cast<int>(rects.size()));
    }
    p_.setBrush(Qt::NoBrush);
    for (auto& [key, rects] : borders_) {
      const uint8_t marks = static_cast<uint8_t>(key >> 8);
      p_.setPen(QPen(
          marks & mark::kAnyFinding ? FindingBorderColor() : RunFill(key & 0xff, marks).darker(150),
          1));
      p_.drawRects(rects.data(), static_cast<int>(rects.size()));
    }
    p_.setPen(QPen(QColor(0x33, 0x38, 0x40), 1.5));
    p_.drawLines(brackets_.data(), static_cast<int>(brackets_.size()));
    p_.setFont(PixelFont(11));
    const QFontMetricsF fm(p_.font());
    for (const BoxText& t : texts_) {
      p_.setPen(TextOn(t.fill));
      p_.drawText(t.rect.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                  fm.elidedText(t.text, Qt::ElideRight, t.rect.width() - 5));
    }
  }

  // A dashed line where a process that did not close its file showed its last sign of life
  // (a hang: the gap between its last call and this line); when that is right of the view, a
  // tag at the right edge says when.
  void PaintEndMarkers() {
    p_.setFont(PixelFont(10, true));
    const QFontMetricsF fm(p_.font());
    for (const DisplayRow* row : visible_) {
      if (!row->first_of_device || row->device < 0) continue;
      const DeviceRow& d = s_.index->devices[row->device];
      if (d.ended_cleanly) continue;
      const double x = x0_ + s_.axis.ToPixel(d.last_alive_ns);
      const double top = s_.geometry.ruler_height + row->y - s_.scroll_y;
      const QString when = QString::fromStdString(FormatDuration(d.last_alive_ns));
      if (x > s_.width - 2) {
        const QString text = "file not closed; last sign of life at " + when + " \u25b8";
        const double w = fm.horizontalAdvance(text) + 8;
        const QRectF tag(s_.width - w - 2, top + 2, w, 15);
        p_.fillRect(tag, QColor(255, 255, 255, 230));
        p_.setPen(FindingBorderColor());
        p_.drawText(tag, Qt::AlignCenter, text);
        continue;
      }
      if (x < x0_) continue;
      double bottom = row->y + row->height;
      for (const DisplayRow* r : visible_)
        if (r->device == row->device) bottom = std::max(bottom, r->y + r->height);
      p_.setPen(QPen(FindingBorderColor(), 1.5, Qt::DashLine));
      p_.drawLine(QPointF(x, top), QPointF(x, s_.geometry.ruler_height + bottom - s_.scroll_y));
      p_.setPen(FindingBorderColor());
      p_.drawText(QPointF(x + 3, top + 11), "trace ends (file not closed) at " + when);
    }
  }

  std::optional<QRectF> RectOf(CallRef r) const { return CallRect(s_, r); }

  // Rectangles of calls, widened to at least 5 px so that a thin call still shows its frame.
  std::vector<QRectF> RectsOf(const std::vector<CallRef>& calls) const {
    std::vector<QRectF> rects;
    for (CallRef c : calls)
      if (auto r = RectOf(c)) rects.push_back(r->width() < 5 ? r->adjusted(-2, 0, 2, 0) : *r);
    return rects;
  }

  // Frames are painted *under* the boxes, grown by `grow`: they show around a call without ever
  // covering it or a neighbour (adjacent thin calls of a finding stay red).
  void Underlay(const std::vector<CallRef>& calls, const QColor& color, double grow) {
    for (const QRectF& r : RectsOf(calls)) p_.fillRect(r.adjusted(-grow, -grow, grow, grow), color);
  }

  void Connect(const std::vector<CallRef>& calls, const QColor& color) {
    std::vector<QRectF> rects = RectsOf(calls);
    if (rects.size() < 2) return;
    std::sort(rects.begin(), rects.end(),
              [](const QRectF& a, const QRectF& b) { return a.top() < b.top(); });
    p_.setPen(QPen(color, 1.5, Qt::DashLine));
    for (size_t i = 1; i < rects.size(); ++i)
      p_.drawLine(QPointF(rects[i - 1].center().x(), rects[i - 1].bottom() + 2),
                  QPointF(rects[i].center().x(), rects[i].top() - 2));
  }

  std::vector<CallRef> SelectedLinks() const {
    if (!s_.selected) return {};
    auto linked = s_.session->Linked(*s_.selected);
    if (linked.empty()) linked.push_back(*s_.selected);
    return linked;
  }

  // Before the boxes: the selected finding's calls in yellow, the calls NCCL pairs with the
  // selected (black) or hovered (grey) call.
  void PaintLinkUnderlays() {
    if (!s_.highlighted.empty()) Underlay(s_.highlighted, HighlightColor(), 4);
    if (s_.hovered && s_.hovered != s_.selected)
      Underlay(s_.session->Linked(*s_.hovered), QColor(0x77, 0x77, 0x77), 1.5);
    Underlay(SelectedLinks(), LinkColor(), 2);
  }

  // After the boxes: dashed lines joining them, and the seq of the selected call.
  void PaintLinks() {
    if (s_.hovered && s_.hovered != s_.selected)
      Connect(s_.session->Linked(*s_.hovered), QColor(0x55, 0x55, 0x55));
    if (!s_.selected) return;
    Connect(SelectedLinks(), LinkColor());
    const auto cs = s_.session->CommSeqOf(*s_.selected);
    const auto r = RectOf(*s_.selected);
    if (!cs || !r) return;
    p_.setFont(PixelFont(11, true));
    p_.setPen(LinkColor());
    // Left of the box: finding labels take the right.
    const QString tag = QString(cs->p2p ? "pair #%1" : "seq %1").arg(cs->seq);
    const QFontMetricsF fm(p_.font());
    const double w = fm.horizontalAdvance(tag) + 6;
    const QRectF area(r->left() - 6 - w, r->center().y() - 8, w, 16);
    p_.fillRect(area, QColor(255, 255, 255, 230));
    p_.drawText(area, Qt::AlignCenter, tag);
  }

  // The finding's short text on (or next to) each marked call. A label never covers the next
  // marked call of its lane: it is elided to the room before it (and to kMaxLabelWidth).
  void PaintFindingLabels() {
    constexpr double kMaxLabelWidth = 360;
    p_.setFont(PixelFont(11, true));
    const QFontMetricsF fm(p_.font());
    std::map<uint32_t, double> lane_right;  // per lane: right edge of its last label
    for (size_t k = 0; k < marked_runs_.size(); ++k) {
      if (stats_.labels >= kMaxLabelsPerFrame) break;
      const MarkedRun& m = marked_runs_[k];
      const Lane& lane = s_.index->lanes[m.lane];
      if (lane.gpu) continue;
      double room_end = s_.width;
      for (size_t n = k + 1; n < marked_runs_.size(); ++n)
        if (marked_runs_[n].lane == m.lane && marked_runs_[n].rect.left() > m.rect.right()) {
          room_end = marked_runs_[n].rect.left() - 2;
          break;
        }
      const CallRef call{lane.file, lane.call[m.run.first]};
      QString text;
      const auto& findings = s_.session->marks().FindingsOf(call);
      if (!findings.empty()) {
        const analysis::Finding& f = s_.session->report().findings[findings.front()];
        text = QString::fromUtf8(analysis::FindingKindName(f.kind).data()) + ": " +
               QString::fromStdString(f.short_text);
      }
      if (text.isEmpty()) text = QString::fromUtf8(MarkName(m.run.flags).data());
      if (m.run.count > 1) text = QString("%1 calls: ").arg(m.run.count) + text;
      double& right = lane_right[m.lane];
      const QRectF& box = m.rect;
      if (box.width() >= fm.horizontalAdvance(text) + 8) {  // inside the red box
        if (box.left() < right) continue;
        p_.setPen(TextOn(RunFill(m.run.style, m.run.flags)));
        p_.drawText(box.adjusted(4, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
        right = box.right();
        ++stats_.labels;
        continue;
      }
      const double left = std::max(box.right() + 3, right);
      const double room = std::min(room_end - left, kMaxLabelWidth);
      if (room < 40) continue;
      text = fm.elidedText(text, Qt::ElideRight, room - 8);
      const QRectF tag(left, box.center().y() - 8, fm.horizontalAdvance(text) + 8, 16);
      p_.fillRect(tag, QColor(255, 255, 255, 230));
      p_.setPen(QPen(FindingBorderColor(), 1));
      p_.drawRect(tag);
      p_.setPen(FindingBorderColor());
      p_.drawText(tag, Qt::AlignCenter, text);
      right = tag.right() + 4;
      ++stats_.labels;
    }
  }

  void PaintLabelColumn() {
    const double rh = s_.geometry.ruler_height;
    p_.save();
    p_.setClipRect(QRectF(0, rh, x0_, s_.height - rh));
    p_.fillRect(QRectF(0, rh, x0_, s_.height - rh), QColor(0xf4, 0xf5, 0xf7));
    for (const DisplayRow* row : visible_) PaintRowLabel(*row);
    p_.restore();
    p_.fillRect(QRectF(x0_ - 1, rh, 1, s_.height - rh), QColor(0xc8, 0xcd, 0xd5));
  }

  void PaintRowLabel(const DisplayRow& row) {
    const double top = s_.geometry.ruler_height + row.y - s_.scroll_y;
    const QRectF area(6, top, x0_ - 12, row.height);
    if (row.kind == DisplayRow::kHost) {
      p_.fillRect(QRectF(0, top, x0_, row.height), QColor(0xd5, 0xdc, 0xe6));
      p_.setPen(QColor(0x22, 0x2b, 0x36));
      p_.setFont(PixelFont(11, true));
      const HostGroup& h = s_.index->hosts[row.host];
      const QString text = QString("%1 %2  (%3 device%4)")
                               .arg(row.collapsed ? "\u25b8" : "\u25be")
                               .arg(QString::fromStdString(h.host))
                               .arg(h.devices.size())
                               .arg(h.devices.size() == 1 ? "" : "s");
      p_.drawText(area, Qt::AlignVCenter | Qt::AlignLeft, text);
      return;
    }
    const DeviceRow& d = s_.index->devices[row.device];
    const Lane& lane = s_.index->lanes[row.lanes.front()];
    if (row.first_of_device) {
      p_.fillRect(QRectF(0, top, x0_, 1), QColor(0xd0, 0xd5, 0xdd));
      p_.setPen(QColor(0x11, 0x18, 0x27));
      p_.setFont(PixelFont(12, true));
      const bool can_collapse = d.lanes.size() > 1;
      QString label = QString::fromStdString(d.Label());
      if (can_collapse) label = QString(row.collapsed ? "\u25b8 " : "\u25be ") + label;
      p_.drawText(QRectF(area.left(), top + 1, area.width(), 15), Qt::AlignLeft | Qt::AlignVCenter,
                  label);
    }
    p_.setFont(PixelFont(10));
    p_.setPen(QColor(0x5b, 0x63, 0x70));
    QString right;
    if (row.collapsed)
      right = QString("%1 lanes").arg(row.lanes.size());
    else if (lane.gpu)
      right = "GPU";
    else
      right = QString("stream 0x%1").arg(lane.stream, 0, 16);
    // The device's first row: its name on the first line, host and pid on the second. Every
    // row: its lane (stream) on the right.
    const bool two_lines = row.first_of_device && row.height >= 26;
    const QRectF line =
        row.first_of_device ? QRectF(area.left(), top + 15, area.width(), row.height - 15) : area;
    if (two_lines)
      p_.drawText(line, Qt::AlignLeft | Qt::AlignVCenter, QString::fromStdString(d.Sublabel()));
    if (two_lines || !row.first_of_device)
      p_.drawText(line, Qt::AlignRight | Qt::AlignVCenter, right);
  }

  void PaintRuler() {
    const double rh = s_.geometry.ruler_height;
    p_.fillRect(QRectF(0, 0, s_.width, rh), QColor(0xee, 0xf0, 0xf3));
    p_.fillRect(QRectF(0, rh - 1, s_.width, 1), QColor(0xb8, 0xbe, 0xc7));
    p_.setFont(PixelFont(10));
    p_.setPen(QColor(0x44, 0x4b, 0x55));
    p_.drawText(QRectF(6, 0, x0_ - 12, rh), Qt::AlignLeft | Qt::AlignVCenter,
                QString("time since first call  \u2192"));
    p_.save();
    p_.setClipRect(QRectF(x0_, 0, s_.width - x0_, rh));
    for (const RulerTick& t : ticks_) {
      const double x = x0_ + t.x;
      p_.drawLine(QPointF(x, rh - (t.major ? 9 : 4)), QPointF(x, rh - 1));
      if (t.major)
        p_.drawText(QRectF(x + 3, 2, 120, rh - 12), Qt::AlignLeft | Qt::AlignVCenter,
                    QString::fromStdString(t.label));
    }
    p_.restore();
  }

  struct BoxText {
    QRectF rect;
    QString text;
    QColor fill;
  };
  struct MarkedRun {
    uint32_t lane;
    PixelRun run;
    QRectF rect;
  };

  QPainter& p_;
  const TimelineScene& s_;
  const double x0_;
  PaintStats stats_;
  std::vector<RulerTick> ticks_;
  std::vector<const DisplayRow*> visible_;
  std::vector<PixelRun> runs_, group_runs_;
  std::map<uint32_t, std::vector<QRectF>> fills_, borders_;
  std::map<uint8_t, std::vector<QRectF>> hatches_;
  std::vector<QLineF> brackets_;
  std::vector<BoxText> texts_;
  std::vector<MarkedRun> marked_runs_;
};

}  // namespace

PaintStats PaintTimeline(QPainter& p, const TimelineScene& scene) {
  if (!scene.session || !scene.index || !scene.layout) {
    p.fillRect(QRectF(0, 0, scene.width, scene.height), Qt::white);
    return {};
  }
  return Painter(p, scene).Paint();
}

std::optional<QRectF> CallRect(const TimelineScene& s, CallRef r) {
  if (!s.session || !s.index || !s.layout) return std::nullopt;
  const auto box = s.index->Locate(s.session->model(), r);
  if (!box) return std::nullopt;
  const int ri = s.layout->RowOfLane(box->lane);
  if (ri < 0) return std::nullopt;
  const DisplayRow& row = s.layout->rows[ri];
  const Lane& lane = s.index->lanes[box->lane];
  auto [y0, y1] = BoxBand(s, row, lane.gpu && !row.collapsed);
  if (y1 < s.geometry.ruler_height || y0 > s.height) return std::nullopt;
  const double x0 = s.geometry.label_width + s.axis.ToPixel(lane.boxes.begin[box->pos]);
  const double x1 = s.geometry.label_width + s.axis.ToPixel(lane.boxes.end[box->pos]);
  return QRectF(x0, y0, std::max(x1 - x0, 1.0), y1 - y0);
}

}  // namespace ncclrr::viewer
