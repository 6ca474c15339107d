#pragma once
// Colours of the viewer, in one place: a calm colour per collective, red reserved for calls the
// analysis named, and a distinct hatch for each kind of data finding so wrong sums, races and
// hangs read differently even in a black-and-white printout.
#include <QBrush>
#include <QColor>

#include "models/timeline_index.h"

namespace ncclrr::viewer {

QColor StyleColor(BoxStyle s);
QColor StyleBorderColor(BoxStyle s);

QColor FindingColor();  // fill of every call a finding names
QColor FindingBorderColor();
QColor InFlightColor();   // amber: never returned before the trace ended
QColor LinkColor();       // outlines and connector of the same (comm, seq)
QColor HighlightColor();  // outline of the selected finding's calls

// Fill for a run with these marks (FindingColor, InFlightColor, or the style's colour).
QColor RunFill(uint8_t style, uint8_t marks);
// The hatch drawn over a run with these marks; Qt::NoBrush when plain.
QBrush RunHatch(uint8_t marks);
// Text colour that reads on `fill`.
QColor TextOn(const QColor& fill);

// Alignment view cells.
QColor DisagreeCellColor();  // differs from the majority of its row
QColor MissingCellColor();   // a rank has no call at this seq
QColor FindingCellColor();   // named by a finding

}  // namespace ncclrr::viewer
