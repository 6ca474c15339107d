#pragma once
// Loads a trace off the GUI thread. The worker builds immutable TraceSessions and hands them to
// the GUI thread through queued calls: the timeline first, then the same trace with its
// findings. A newer Start() makes older results be ignored.
#include <QObject>
#include <QString>
#include <QThread>
#include <memory>

#include "models/trace_session.h"

namespace ncclrr::viewer {

class SessionLoader : public QObject {
  Q_OBJECT
 public:
  explicit SessionLoader(QObject* parent = nullptr);
  ~SessionLoader() override;  // waits for a running load: the session it builds is then dropped

  void Start(const QString& path);
  void SetOptions(const SessionOptions& options) { options_ = options; }
  bool busy() const { return thread_ != nullptr; }

 Q_SIGNALS:
  void progress(int percent, const QString& what);
  // The calls, before the check: a session whose checked() is false. `loaded` follows.
  void timelineReady(std::shared_ptr<const ncclrr::viewer::TraceSession> session);
  void loaded(std::shared_ptr<const ncclrr::viewer::TraceSession> session);
  void failed(const QString& path, const QString& text);

 private:
  QThread* thread_ = nullptr;
  quint64 generation_ = 0;
  SessionOptions options_;
};

}  // namespace ncclrr::viewer
