// The real window: traces that cannot be opened give a readable error dialog (never a crash),
// loading happens off the GUI thread, and a finding selects and centres its calls in every view.
#include "main_window.h"

#include <gtest/gtest.h>
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDropEvent>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>
#include <QTextEdit>
#include <filesystem>
#include <fstream>

#include "ncclrr/testing/synthetic_trace.h"
#include "ncclrr/testing/temp_dir.h"
#include "scenarios.h"
#include "viewer_test_util.h"

namespace ncclrr::viewer {
namespace {

// Opens `path` through the window's background loader; returns the error text ("" on success).
QString OpenAndWait(MainWindow& w, const std::string& path) {
  QSignalSpy loaded(w.loader(), &SessionLoader::loaded);
  QSignalSpy failed(w.loader(), &SessionLoader::failed);
  w.OpenPath(QString::fromStdString(path));
  for (int i = 0; i < 300 && loaded.isEmpty() && failed.isEmpty(); ++i) loaded.wait(100);
  EXPECT_FALSE(loaded.isEmpty() && failed.isEmpty()) << "no answer from the loader";
  QApplication::processEvents();
  return failed.isEmpty() ? QString() : w.last_error();
}

QMessageBox* ErrorDialog(MainWindow& w) { return w.findChild<QMessageBox*>("load-error"); }

TEST(MainWindow, ACorruptTraceGivesAnErrorDialog) {
  testing::EnsureApp();
  const std::string dir = testing::TempDir("corrupt");
  std::ofstream(dir + "/host-1.ncclrr") << "this is not a trace, just some bytes";
  MainWindow w;
  const QString error = OpenAndWait(w, dir);
  ASSERT_FALSE(error.isEmpty());
  EXPECT_TRUE(error.startsWith("Could not open '" + QString::fromStdString(dir) + "'"))
      << error.toStdString();
  EXPECT_TRUE(error.contains("The trace is damaged")) << error.toStdString();
  EXPECT_TRUE(error.contains("ncclrr info")) << error.toStdString();
  QMessageBox* box = ErrorDialog(w);
  ASSERT_NE(box, nullptr);
  EXPECT_EQ(box->text(), error);
  EXPECT_EQ(box->icon(), QMessageBox::Critical);
  EXPECT_EQ(w.session(), nullptr);
}

// A running job's directory: F5 reads it again and shows what was written since.
TEST(MainWindow, ReloadShowsTheLatestStateOfALiveDirectory) {
  testing::EnsureApp();
  SyntheticScript script;
  for (const auto& sc : ncclrr::testing::GoldenScenarios())
    if (sc.name == "clean_two_ranks") script = sc.build();
  ASSERT_FALSE(script.processes.empty());
  for (ScriptProcess& p : script.processes) p.close = false;  // still running
  const std::string dir = testing::WriteScript("live", script);
  MainWindow w;
  ASSERT_TRUE(OpenAndWait(w, dir).isEmpty());
  const uint64_t before = w.session()->model().total_calls();
  // The job went on: more calls (a second recording of the same script, as another process).
  SyntheticScript more = script;
  const std::string later = testing::WriteScript("live-more", more);
  for (const auto& e : std::filesystem::directory_iterator(later))
    std::filesystem::copy_file(
        e.path(), std::filesystem::path(dir) / ("later-" + e.path().filename().string()));
  QSignalSpy loaded(w.loader(), &SessionLoader::loaded);
  QAction* reload = w.findChild<QAction*>("reload");
  ASSERT_NE(reload, nullptr);
  EXPECT_EQ(reload->shortcut(), QKeySequence(QKeySequence::Refresh));
  reload->trigger();
  ASSERT_TRUE(loaded.wait(30000));
  QApplication::processEvents();
  EXPECT_EQ(w.session()->model().total_calls(), 2 * before);
}

TEST(MainWindow, AMissingOrEmptyDirectorySaysWhatToOpen) {
  testing::EnsureApp();
  MainWindow w;
  const QString missing = OpenAndWait(w, "/nonexistent/ncclrr-trace");
  EXPECT_TRUE(missing.contains("/nonexistent/ncclrr-trace")) << missing.toStdString();
  EXPECT_TRUE(missing.contains("ncclrr record -o DIR")) << missing.toStdString();
  const QString empty = OpenAndWait(w, testing::TempDir("empty"));
  EXPECT_TRUE(empty.contains("Nothing to open there")) << empty.toStdString();
  EXPECT_TRUE(empty.contains("no trace files")) << empty.toStdString();
}

TEST(MainWindow, ATornTraceOpensWithItsNote) {
  testing::EnsureApp();
  // The analysis's own torn-file scenario: a rank's last frame is cut.
  const SyntheticScript* torn = nullptr;
  SyntheticScript script;
  for (const auto& sc : ncclrr::testing::GoldenScenarios())
    if (sc.name == "torn_file") {
      script = sc.build();
      torn = &script;
    }
  ASSERT_NE(torn, nullptr);
  const std::string dir = testing::WriteScript("torn", script);
  MainWindow w;
  EXPECT_TRUE(OpenAndWait(w, dir).isEmpty());
  ASSERT_NE(w.session(), nullptr);
  ASSERT_FALSE(w.session()->report().notes.empty());
  EXPECT_EQ(w.session()->report().notes[0].kind, analysis::NoteKind::kTraceIncomplete);
  EXPECT_EQ(ErrorDialog(w), nullptr);
  EXPECT_EQ(w.findings()->model()->rowCount(), 1);  // the notes group
}

// A big trace's check takes seconds after its calls are read: the timeline shows first, the
// findings panel says the check is running, and when the findings come the view the user
// zoomed to meanwhile stays.
TEST(MainWindow, TheTimelineShowsWhileTheCheckRuns) {
  testing::EnsureApp();
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  QSignalSpy first(w.loader(), &SessionLoader::timelineReady);
  bool checking_shown = false;
  double zoomed_ns_per_px = 0;
  // Runs right after the window's own slot has shown the timeline.
  QObject::connect(w.loader(), &SessionLoader::timelineReady, &w, [&] {
    checking_shown = w.session() && !w.session()->checked() &&
                     w.findings()->findChild<QTextEdit*>() != nullptr &&
                     w.findings()->findChild<QTextEdit*>()->toPlainText().startsWith("Checking");
    w.timeline()->ZoomBy(3);
    zoomed_ns_per_px = w.timeline()->axis().ns_per_px;
  });
  ASSERT_TRUE(OpenAndWait(w, testing::WriteSwapTrace("window-first")).isEmpty());
  ASSERT_EQ(first.size(), 1);
  EXPECT_TRUE(checking_shown);
  ASSERT_TRUE(w.session()->checked());
  EXPECT_FALSE(w.session()->report().findings.empty());
  EXPECT_EQ(&w.session()->model(),
            &first[0][0].value<std::shared_ptr<const TraceSession>>()->model());
  EXPECT_EQ(w.timeline()->scene().session, w.session().get());
  EXPECT_EQ(w.timeline()->axis().ns_per_px, zoomed_ns_per_px);  // not fitted again
  size_t marked = 0;
  for (const Lane& lane : w.timeline()->scene().index->lanes) marked += lane.marked.size();
  EXPECT_GT(marked, 0u);
}

TEST(MainWindow, SelectingAFindingCentresItsCallsInBothViews) {
  testing::EnsureApp();
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(OpenAndWait(w, testing::WriteSwapTrace("window-finding")).isEmpty());
  ASSERT_NE(w.session(), nullptr);
  ASSERT_FALSE(w.session()->report().findings.empty());
  ASSERT_TRUE(w.SelectFinding(0));
  QApplication::processEvents();
  const auto calls = w.session()->CallsOfFinding(0);
  ASSERT_FALSE(calls.empty());
  // Timeline: every call of the finding on screen, highlighted, the first one selected.
  const TimelineScene& scene = w.timeline()->scene();
  EXPECT_EQ(scene.highlighted, calls);
  ASSERT_TRUE(scene.selected);
  EXPECT_EQ(*scene.selected, calls.front());
  for (CallRef c : calls) {
    auto rect = CallRect(scene, c);
    ASSERT_TRUE(rect);
    EXPECT_GE(rect->left(), scene.geometry.label_width);
    EXPECT_LE(rect->right(), scene.width);
  }
  // Alignment: the communicator of the call, its cell current and visible.
  const auto cs = w.session()->CommSeqOf(calls.front());
  ASSERT_TRUE(cs);
  EXPECT_EQ(w.alignment()->comm(), static_cast<int>(cs->comm));
  auto* table = w.alignment()->findChild<QTableView*>();
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->currentIndex(), w.alignment()->model()->IndexOf(cs->seq, cs->rank));
  EXPECT_TRUE(table->viewport()->rect().intersects(table->visualRect(table->currentIndex())));
  // Details: the call.
  EXPECT_GT(w.details()->details()->rowCount(), 3);
}

TEST(MainWindow, SelectingACellSelectsTheCallInTheTimeline) {
  testing::EnsureApp();
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  w.SetSession(testing::Load(testing::WriteCleanTrace("window-cell", 2, 3)));
  auto* table = w.alignment()->findChild<QTableView*>();
  const QModelIndex cell = w.alignment()->model()->index(7, 1);
  table->setCurrentIndex(cell);
  QApplication::processEvents();
  const auto call = w.alignment()->model()->CallAt(cell);
  ASSERT_TRUE(call);
  ASSERT_TRUE(w.timeline()->scene().selected);
  EXPECT_EQ(*w.timeline()->scene().selected, *call);
  auto rect = CallRect(w.timeline()->scene(), *call);
  ASSERT_TRUE(rect);
  EXPECT_NEAR(rect->center().x(),
              w.timeline()->scene().geometry.label_width + w.timeline()->axis().width_px / 2, 2);
}

TEST(MainWindow, ADroppedDirectoryOpensAndBecomesRecent) {
  testing::EnsureApp();
  const std::string dir = testing::WriteCleanTrace("dropped");
  MainWindow w;
  QSignalSpy loaded(w.loader(), &SessionLoader::loaded);
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(QString::fromStdString(dir))});
  QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&w, &enter);
  EXPECT_TRUE(enter.isAccepted());
  QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&w, &drop);
  ASSERT_TRUE(loaded.wait(30000));
  QApplication::processEvents();
  ASSERT_NE(w.session(), nullptr);
  EXPECT_EQ(w.session()->path(), dir);
  // File > Open recent now offers it first.
  QMenu* recent = w.findChild<QMenu*>("recent");
  ASSERT_NE(recent, nullptr);
  ASSERT_FALSE(recent->actions().isEmpty());
  EXPECT_EQ(recent->actions().front()->text(),
            QFileInfo(QString::fromStdString(dir)).absoluteFilePath());
}

TEST(MainWindow, FiltersAndSeqSearchDriveTheViews) {
  testing::EnsureApp();
  MainWindow w;
  w.resize(1400, 900);
  w.show();
  QSignalSpy progress(w.loader(), &SessionLoader::progress);
  ASSERT_TRUE(OpenAndWait(w, testing::WriteCleanTrace("window-filter", 3, 2)).isEmpty());
  EXPECT_GE(progress.count(), 3);  // reading, checking, indexing, done
  auto* bar = w.findChild<FilterBar*>();
  ASSERT_NE(bar, nullptr);
  const auto combos = bar->findChildren<QComboBox*>();
  ASSERT_EQ(combos.size(), 3);  // comm, op, rank
  QComboBox* rank = combos[2];
  rank->setCurrentIndex(rank->findData(2));
  QApplication::processEvents();
  ASSERT_EQ(w.timeline()->scene().index->devices.size(), 1u);
  EXPECT_EQ(w.timeline()->scene().index->devices[0].world_rank, 2);
  QComboBox* op = combos[1];
  op->setCurrentIndex(op->findText("AllReduce"));
  EXPECT_EQ(w.timeline()->scene().index->boxes, 8u);
  rank->setCurrentIndex(0);
  op->setCurrentIndex(0);
  EXPECT_EQ(w.timeline()->scene().index->boxes, 24u);
  // Seq search: every rank's call at seq 5 is highlighted and the first one selected.
  QLineEdit* seq = nullptr;
  for (QLineEdit* e : bar->findChildren<QLineEdit*>())
    if (e->placeholderText() == "go to seq") seq = e;
  ASSERT_NE(seq, nullptr);
  seq->setText("5");
  QTest::keyClick(seq, Qt::Key_Return);
  EXPECT_EQ(w.timeline()->scene().highlighted.size(), 3u);
  ASSERT_TRUE(w.timeline()->scene().selected);
  EXPECT_EQ(w.session()->model().call(*w.timeline()->scene().selected).seq, 5u);
  // A malformed time window is reported, not applied.
  QString error;
  EXPECT_FALSE(FilterBar::ParseWindow("1.5", "abc", &error));
  EXPECT_TRUE(error.contains("expected two numbers of milliseconds")) << error.toStdString();
  EXPECT_FALSE(FilterBar::ParseWindow("2", "1", &error));
  EXPECT_TRUE(error.contains("must be after")) << error.toStdString();
  auto window = FilterBar::ParseWindow("0.5", "1.25", &error);
  ASSERT_TRUE(window);
  EXPECT_EQ(window->first, 500'000);
  EXPECT_EQ(window->second, 1'250'000);
}

}  // namespace
}  // namespace ncclrr::viewer

namespace ncclrr::viewer {
namespace {

// A trace of more calls than --max-calls: the window opens on buckets, and selecting a finding
// zooms to it, reads the calls there in the background and selects the finding's own calls.
TEST(MainWindow, ATraceTooLargeToHoldReadsTheCallsOfAFindingItZoomsTo) {
  testing::EnsureApp();
  const std::string dir = ncclrr::testing::FreshTempDir("viewer-windowed") + "/t";
  SyntheticTraceOptions o;
  o.dir = dir;
  o.ranks = 4;
  o.steps = 300;
  o.swap_rank = 3;
  o.swap_steps = {150};
  o.flush_every = 50;
  ASSERT_TRUE(WriteSyntheticTrace(o).ok());
  MainWindow w;
  SessionOptions options;
  options.max_calls = 2000;  // of 4,800: views of at most 1,000 calls are read
  w.loader()->SetOptions(options);
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(OpenAndWait(w, dir).isEmpty());
  ASSERT_NE(w.session(), nullptr);
  ASSERT_TRUE(w.session()->windowed());
  EXPECT_FALSE(w.session()->window());
  ASSERT_TRUE(w.session()->checked());
  ASSERT_FALSE(w.session()->report().findings.empty());
  EXPECT_LT(w.timeline()->scene().index->boxes, 1000u);

  ASSERT_TRUE(w.SelectFinding(0));
  for (int i = 0; i < 100 && !w.session()->window(); ++i) QTest::qWait(100);
  ASSERT_TRUE(w.session()->window()) << "the calls in view were never read";
  QTest::qWait(200);  // the finding is selected again on the window read
  const TimelineScene& scene = w.timeline()->scene();
  ASSERT_TRUE(scene.selected);
  EXPECT_EQ(w.session()->BucketAt(*scene.selected), nullptr);
  EXPECT_TRUE(w.session()->marks().MarksOf(*scene.selected) & mark::kFinding);
  ASSERT_FALSE(scene.highlighted.empty());
  bool swapping_rank = false;
  for (CallRef r : scene.highlighted) {
    EXPECT_EQ(w.session()->BucketAt(r), nullptr);
    swapping_rank = swapping_rank || w.session()->model().call(r).rank == 3;
  }
  EXPECT_TRUE(swapping_rank);
}

}  // namespace
}  // namespace ncclrr::viewer
