#pragma once
// Prints any item model as text, one row per line, children indented: the model tests compare
// it with literal expected text (hotspot's model tests do the same).
#include <QAbstractItemModel>
#include <QString>

namespace ncclrr::viewer {

struct DumpOptions {
  int max_rows = -1;              // per level; -1: all
  int extra_role = -1;            // also print this role's value as "{value}" when set
  bool headers = true;            // first line: the horizontal header
  bool vertical_headers = false;  // start each top-level row with its vertical header
};

QString DumpModel(const QAbstractItemModel& model, const DumpOptions& options = {});

}  // namespace ncclrr::viewer
