#include "session_loader.h"

#include <QPointer>
#include <exception>

#include "models/path_text.h"

namespace ncclrr::viewer {

SessionLoader::SessionLoader(QObject* parent) : QObject(parent) {}

SessionLoader::~SessionLoader() {
  ++generation_;
  for (QThread* t : findChildren<QThread*>()) t->wait();
}

void SessionLoader::Start(const QString& path) {
  const quint64 gen = ++generation_;
  thread_ = nullptr;  // a running load finishes in the background; its result is ignored
  QPointer<SessionLoader> self(this);
  const std::string p = PathToBytes(path);  // the bytes the file system knows
  // Results travel to the GUI thread as queued calls on `this`; `gen` drops stale ones.
  auto deliver = [self, gen](auto fn) {
    QMetaObject::invokeMethod(
        self.data(),
        [self, gen, fn] {
          if (self && self->generation_ == gen) fn(self.data());
        },
        Qt::QueuedConnection);
  };
  const SessionOptions options = options_;
  thread_ = QThread::create([p, path, deliver, options] {
    StatusOr<std::shared_ptr<const TraceSession>> r = Status(StatusCode::kInternal, "not run");
    try {
      r = TraceSession::Load(
          p,
          [&](int percent, std::string_view what) {
            const QString text = QString::fromUtf8(what.data(), static_cast<int>(what.size()));
            deliver([percent, text](SessionLoader* l) { Q_EMIT l->progress(percent, text); });
          },
          [&](std::shared_ptr<const TraceSession> first) {
            deliver([first](SessionLoader* l) { Q_EMIT l->timelineReady(first); });
          },
          options);
    } catch (const std::exception& e) {  // out of memory on a huge trace, mostly
      r = Status(StatusCode::kInternal, std::string("loading stopped: ") + e.what());
    }
    if (r.ok()) {
      auto session = r.value();
      deliver([session](SessionLoader* l) { Q_EMIT l->loaded(session); });
    } else {
      const QString text = QString::fromStdString(LoadErrorText(p, r.status()));
      deliver([path, text](SessionLoader* l) { Q_EMIT l->failed(path, text); });
    }
  });
  QThread* t = thread_;
  t->setParent(this);  // the destructor waits for every load still running
  connect(t, &QThread::finished, this, [this, t] {
    if (thread_ == t) thread_ = nullptr;
    t->deleteLater();
  });
  t->start();
}

}  // namespace ncclrr::viewer
