#pragma once
// The filter bar: communicator, operation and rank choosers, a time window (ms since the first
// call) and a seq search. The window keeps a TimelineFilter; the index is rebuilt from it.
#include <QComboBox>
#include <QLineEdit>
#include <QWidget>
#include <memory>
#include <optional>

#include "models/trace_session.h"

namespace ncclrr::viewer {

class FilterBar : public QWidget {
  Q_OBJECT
 public:
  explicit FilterBar(QWidget* parent = nullptr);
  void SetSession(std::shared_ptr<const TraceSession> session);
  // The same trace with its findings: the choices stay.
  void UpdateSession(std::shared_ptr<const TraceSession> session) { session_ = std::move(session); }
  TimelineFilter Filter() const;
  // Parses "from - to" milliseconds; sets `error` and returns nullopt when malformed.
  static std::optional<std::pair<int64_t, int64_t>> ParseWindow(const QString& from,
                                                                const QString& to, QString* error);

 Q_SIGNALS:
  void changed();  // comm, op, rank or window changed
  void seqRequested(quint64 seq);
  void problem(const QString& text);  // a malformed entry, for the status bar

 private:
  std::shared_ptr<const TraceSession> session_;
  QComboBox* comm_ = nullptr;
  QComboBox* op_ = nullptr;
  QComboBox* rank_ = nullptr;
  QLineEdit* from_ = nullptr;
  QLineEdit* to_ = nullptr;
  QLineEdit* seq_ = nullptr;
  std::optional<std::pair<int64_t, int64_t>> window_;
  bool updating_ = false;
};

}  // namespace ncclrr::viewer
