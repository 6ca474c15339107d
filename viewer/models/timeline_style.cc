#include "models/timeline_style.h"

namespace ncclrr::viewer {

QColor StyleColor(BoxStyle s) {
  // Tableau-like muted palette without its red (reserved for findings).
  static const QColor kColors[kNumBoxStyles] = {
      QColor(0x4e, 0x79, 0xa7),  // AllReduce: blue
      QColor(0x59, 0xa1, 0x4f),  // Broadcast: green
      QColor(0xb0, 0x7a, 0xa1),  // Reduce: purple
      QColor(0x76, 0xb7, 0xb2),  // AllGather: teal
      QColor(0xed, 0xc9, 0x48),  // ReduceScatter: yellow
      QColor(0x9c, 0x75, 0x5f),  // AlltoAll: brown
      QColor(0xba, 0xb0, 0xac),  // Gather/Scatter: grey
      QColor(0x8c, 0xd1, 0x7d),  // Send: light green
      QColor(0xa0, 0xcb, 0xe8),  // Recv: light blue
      QColor(0x79, 0x70, 0x6e),  // lifecycle: dark grey
      QColor(0xd7, 0xb5, 0xa6),  // other: sand
  };
  const int i = static_cast<int>(s);
  return i >= 0 && i < kNumBoxStyles ? kColors[i] : kColors[kNumBoxStyles - 1];
}

QColor StyleBorderColor(BoxStyle s) { return StyleColor(s).darker(140); }

QColor FindingColor() { return QColor(0xd6, 0x27, 0x28); }
QColor FindingBorderColor() { return QColor(0x7f, 0x0f, 0x10); }
QColor InFlightColor() { return QColor(0xf5, 0x9e, 0x0b); }
QColor LinkColor() { return QColor(0x11, 0x11, 0x11); }
QColor HighlightColor() { return QColor(0xff, 0xc4, 0x00); }

QColor RunFill(uint8_t style, uint8_t marks) {
  if (marks & mark::kAnyFinding) return FindingColor();
  if (marks & mark::kInFlight) return InFlightColor();
  return StyleColor(static_cast<BoxStyle>(style));
}

QBrush RunHatch(uint8_t marks) {
  if (marks & mark::kWrongSum) return QBrush(Qt::white, Qt::BDiagPattern);
  if (marks & mark::kRace) return QBrush(QColor(0xff, 0xe0, 0x4d), Qt::DiagCrossPattern);
  if (marks & (mark::kHang | mark::kInFlight))
    return QBrush(QColor(0x20, 0x20, 0x20), Qt::FDiagPattern);
  return QBrush(Qt::NoBrush);
}

QColor TextOn(const QColor& fill) {
  return fill.lightnessF() < 0.55 ? QColor(Qt::white) : QColor(0x11, 0x11, 0x11);
}

QColor DisagreeCellColor() { return QColor(0xf8, 0xb4, 0xb4); }
QColor MissingCellColor() { return QColor(0xfd, 0xe6, 0x8a); }
QColor FindingCellColor() { return QColor(0xd6, 0x27, 0x28); }

}  // namespace ncclrr::viewer
