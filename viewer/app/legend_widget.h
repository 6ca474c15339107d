#pragma once
// A one-line legend under the filter bar: the colour of each collective, then the marks.
#include <QPainter>
#include <QWidget>

#include "models/timeline_style.h"

namespace ncclrr::viewer {

class LegendWidget : public QWidget {
 public:
  explicit LegendWidget(QWidget* parent = nullptr) : QWidget(parent) { setFixedHeight(22); }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    QFont f = font();
    f.setPixelSize(11);
    p.setFont(f);
    double x = 8;
    auto swatch = [&](const QColor& fill, const QBrush& hatch, const QString& text) {
      const QRectF r(x, 5, 18, 12);
      p.fillRect(r, fill);
      if (hatch.style() != Qt::NoBrush) p.fillRect(r, hatch);
      p.setPen(fill.darker(150));
      p.drawRect(r);
      p.setPen(QColor(0x33, 0x33, 0x33));
      const double w = p.fontMetrics().horizontalAdvance(text);
      p.drawText(QPointF(x + 22, 15), text);
      x += 22 + w + 14;
    };
    for (BoxStyle s : {BoxStyle::kAllReduce, BoxStyle::kBroadcast, BoxStyle::kReduce,
                       BoxStyle::kAllGather, BoxStyle::kReduceScatter, BoxStyle::kAlltoAll,
                       BoxStyle::kSend, BoxStyle::kRecv, BoxStyle::kLifecycle})
      swatch(StyleColor(s), Qt::NoBrush, QString::fromUtf8(StyleName(s).data()));
    x += 10;
    swatch(FindingColor(), Qt::NoBrush, "finding");
    swatch(FindingColor(), RunHatch(mark::kWrongSum), "wrong sum");
    swatch(FindingColor(), RunHatch(mark::kRace), "race");
    swatch(FindingColor(), RunHatch(mark::kHang), "hang");
    swatch(InFlightColor(), RunHatch(mark::kInFlight), "in flight at end");
    p.setPen(QPen(QColor(0x55, 0x5b, 0x66), 1));
    p.drawLine(QPointF(x, 14), QPointF(x + 18, 14));
    p.drawLine(QPointF(x, 11), QPointF(x, 14));
    p.drawLine(QPointF(x + 18, 11), QPointF(x + 18, 14));
    p.setPen(QColor(0x33, 0x33, 0x33));
    p.drawText(QPointF(x + 22, 15), "group scope");
  }
};

}  // namespace ncclrr::viewer
