// One thread per rank with the steps kept aligned, for the scenario runner and the sweep.
#pragma once
#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

namespace ncclrr::example {

// Each thread runs init(rank), then for every step `step(rank, step, barrier)`, which returns the
// wrong results it found (it may wait at `barrier` itself, as every rank does); the ranks' counts
// are summed and report(step, sum) runs once, on rank 0's thread, between two barriers. Then
// finish(rank).
template <typename Init, typename Step, typename Report, typename Finish>
void RunRankThreads(int ranks, int steps, Init init, Step step, Report report, Finish finish) {
  std::barrier<> sync_point(ranks);
  std::atomic<long> step_wrong{0};
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      init(rank);
      for (int s = 0; s < steps; ++s) {
        step_wrong += step(rank, s, sync_point);
        sync_point.arrive_and_wait();
        if (rank == 0) report(s, step_wrong.exchange(0));
        sync_point.arrive_and_wait();
      }
      finish(rank);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace ncclrr::example
