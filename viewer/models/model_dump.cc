#include "models/model_dump.h"

#include <QStringList>
#include <algorithm>

namespace ncclrr::viewer {
namespace {

void DumpRows(const QAbstractItemModel& m, const QModelIndex& parent, int depth,
              const DumpOptions& o, QString* out) {
  const int rows = m.rowCount(parent);
  const int shown = o.max_rows < 0 ? rows : std::min(rows, o.max_rows);
  for (int r = 0; r < shown; ++r) {
    QStringList cells;
    if (o.vertical_headers && !parent.isValid()) cells << m.headerData(r, Qt::Vertical).toString();
    for (int c = 0; c < m.columnCount(parent); ++c) {
      const QModelIndex i = m.index(r, c, parent);
      QString cell = i.data(Qt::DisplayRole).toString();
      if (o.extra_role >= 0) {
        const QVariant extra = i.data(o.extra_role);
        if (extra.isValid()) cell += "{" + extra.toString() + "}";
      }
      cells << cell;
    }
    *out += QString(depth * 2, ' ') + cells.join(" | ") + "\n";
    const QModelIndex first = m.index(r, 0, parent);
    if (m.hasChildren(first)) DumpRows(m, first, depth + 1, o, out);
  }
  if (shown < rows) *out += QString(depth * 2, ' ') + QString("... %1 more\n").arg(rows - shown);
}

}  // namespace

QString DumpModel(const QAbstractItemModel& m, const DumpOptions& o) {
  QString out;
  if (o.headers) {
    QStringList h;
    if (o.vertical_headers) h << "";
    for (int c = 0; c < m.columnCount(); ++c) h << m.headerData(c, Qt::Horizontal).toString();
    out += h.join(" | ") + "\n";
  }
  DumpRows(m, {}, 0, o, &out);
  return out;
}

}  // namespace ncclrr::viewer
