#include "filter_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <cmath>
#include <set>

#include "ncclrr/trace/describe.h"

namespace ncclrr::viewer {

FilterBar::FilterBar(QWidget* parent) : QWidget(parent) {
  auto* l = new QHBoxLayout(this);
  l->setContentsMargins(4, 2, 4, 2);
  auto add_combo = [&](const char* label) {
    l->addWidget(new QLabel(label));
    auto* c = new QComboBox(this);
    c->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    l->addWidget(c);
    connect(c, &QComboBox::currentIndexChanged, this, [this] {
      if (!updating_) Q_EMIT changed();
    });
    return c;
  };
  comm_ = add_combo("Comm");
  op_ = add_combo("Op");
  rank_ = add_combo("Rank");
  l->addSpacing(12);
  l->addWidget(new QLabel("Window (ms)"));
  from_ = new QLineEdit(this);
  to_ = new QLineEdit(this);
  for (QLineEdit* e : {from_, to_}) {
    e->setMaximumWidth(80);
    l->addWidget(e);
  }
  from_->setPlaceholderText("from");
  to_->setPlaceholderText("to");
  auto* apply = new QPushButton("Apply", this);
  auto* clear = new QPushButton("All", this);
  l->addWidget(apply);
  l->addWidget(clear);
  connect(apply, &QPushButton::clicked, this, [this] {
    QString error;
    auto w = ParseWindow(from_->text(), to_->text(), &error);
    if (!w) {
      Q_EMIT problem(error);
      return;
    }
    window_ = w;
    Q_EMIT changed();
  });
  connect(clear, &QPushButton::clicked, this, [this] {
    from_->clear();
    to_->clear();
    window_.reset();
    Q_EMIT changed();
  });
  l->addSpacing(12);
  l->addWidget(new QLabel("Seq"));
  seq_ = new QLineEdit(this);
  seq_->setMaximumWidth(90);
  seq_->setPlaceholderText("go to seq");
  l->addWidget(seq_);
  connect(seq_, &QLineEdit::returnPressed, this, [this] {
    bool ok = false;
    const quint64 seq = seq_->text().trimmed().toULongLong(&ok);
    if (!ok) {
      Q_EMIT problem("seq: expected a non-negative integer, got '" + seq_->text() + "'");
      return;
    }
    Q_EMIT seqRequested(seq);
  });
  l->addStretch(1);
}

std::optional<std::pair<int64_t, int64_t>> FilterBar::ParseWindow(const QString& from,
                                                                  const QString& to,
                                                                  QString* error) {
  bool ok_a = false, ok_b = false;
  const double a = from.trimmed().toDouble(&ok_a);
  const double b = to.trimmed().toDouble(&ok_b);
  if (!ok_a || !ok_b || !std::isfinite(a) || !std::isfinite(b)) {
    *error = QString(
                 "time window: expected two numbers of milliseconds since the first call, "
                 "got '%1' and '%2'")
                 .arg(from, to);
    return std::nullopt;
  }
  if (b <= a) {
    *error = QString("time window: 'to' (%1 ms) must be after 'from' (%2 ms)").arg(b).arg(a);
    return std::nullopt;
  }
  return std::make_pair(static_cast<int64_t>(std::llround(a * 1e6)),
                        static_cast<int64_t>(std::llround(b * 1e6)));
}

void FilterBar::SetSession(std::shared_ptr<const TraceSession> session) {
  session_ = std::move(session);
  updating_ = true;
  comm_->clear();
  op_->clear();
  rank_->clear();
  window_.reset();
  comm_->addItem("all", -1);
  op_->addItem("all", -1);
  rank_->addItem("all", -1);
  if (session_) {
    int max_ranks = 0;
    for (size_t i = 0; i < session_->model().comms().size(); ++i) {
      const analysis::CommModel& c = session_->model().comms()[i];
      comm_->addItem(QString::fromStdString(c.name.empty() ? Hex64(c.id) : c.name),
                     static_cast<int>(i));
      max_ranks = std::max(max_ranks, c.nranks);
    }
    // The APIs present, from the index's per-call styles (a byte per call: fast on 10 M calls).
    std::set<int> styles;
    for (const Lane& lane : session_->timeline().lanes)
      for (uint8_t st : lane.style) styles.insert(st);
    std::set<int> apis;
    for (int st : styles)
      for (Api a :
           {Api::kAllReduce, Api::kBroadcast, Api::kReduce, Api::kAllGather, Api::kReduceScatter,
            Api::kAlltoAll, Api::kGather, Api::kScatter, Api::kSend, Api::kRecv})
        if (static_cast<int>(StyleOf(a)) == st) apis.insert(static_cast<int>(a));
    for (int a : apis) op_->addItem(QString::fromUtf8(ApiName(static_cast<Api>(a)).data()), a);
    for (int r = 0; r < max_ranks; ++r) rank_->addItem(QString::number(r), r);
  }
  updating_ = false;
}

TimelineFilter FilterBar::Filter() const {
  TimelineFilter f;
  if (comm_->currentData().toInt() >= 0) f.comm = static_cast<size_t>(comm_->currentData().toInt());
  if (op_->currentData().toInt() >= 0) f.api = static_cast<Api>(op_->currentData().toInt());
  if (rank_->currentData().toInt() >= 0) f.rank = rank_->currentData().toInt();
  f.window = window_;
  return f;
}

}  // namespace ncclrr::viewer
