#pragma once
// Loads a trace off the GUI thread. The worker builds an immutable TraceSession and hands it to
// the GUI thread through a queued call; a newer Start() makes older results be ignored.
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
  bool busy() const { return thread_ != nullptr; }

 Q_SIGNALS:
  void progress(int percent, const QString& what);
  void loaded(std::shared_ptr<const ncclrr::viewer::TraceSession> session);
  void failed(const QString& path, const QString& text);

 private:
  QThread* thread_ = nullptr;
  quint64 generation_ = 0;
};

}  // namespace ncclrr::viewer
