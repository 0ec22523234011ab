// The server's channel scheduler thread: drains the receive CQ (server_credit.cc) and every
// interval redistributes active channels among clients by Equation 3.1.
#include <vector>

#include "rpc/server_impl.h"

namespace rdmq::rpc::internal {

void ServerImpl::SchedulerLoop() {
  auto next_tick = Clock::now() + opts_.schedule_interval;
  std::vector<fabric::Completion> cs(256);
  std::vector<std::shared_ptr<SChannel>> touched;
  while (!stop_.load(std::memory_order_acquire)) {
    const auto now = Clock::now();
    const auto wait = next_tick > now ? next_tick - now : Clock::duration::zero();
    (void)recv_cq_->Wait(std::chrono::duration_cast<std::chrono::nanoseconds>(wait));
    DrainReceives(cs, touched);
    if (Clock::now() >= next_tick) {
      Redistribute();
      CheckLiveness();
      // With no client there is nothing to redistribute or check: look ten times less often (a
      // new client's channels get their share from the acceptor; a receive still wakes us).
      next_tick = Clock::now() + (clients() == 0 ? 10 * opts_.schedule_interval : opts_.schedule_interval);
    }
  }
}

void ServerImpl::Redistribute() {
  // A connection's fields change under reg_mu_ (a channel joining, a new client's allotment):
  // they are copied out under it, and written back under it, never read or written bare.
  struct Snapshot {
    std::shared_ptr<Conn> conn;
    std::vector<std::shared_ptr<SChannel>> channels;
    ClientUsage usage;
  };
  std::vector<Snapshot> snaps;
  {
    MutexLock g(reg_mu_);
    for (const auto& [id, c] : conns_) {
      snaps.push_back(
          Snapshot{c, c->channels, ClientUsage{c->nchannels, 0, c->joined_this_interval, c->allotment}});
    }
  }
  if (snaps.empty()) return;
  std::vector<ClientUsage> usage(snaps.size());
  std::vector<std::vector<bool>> masks(snaps.size());
  for (size_t i = 0; i < snaps.size(); ++i) {
    uint64_t u = 0;
    for (const auto& ch : snaps[i].channels) {
      masks[i].push_back(false);
      if (!ch) continue;
      SpinGuard g(ch->mu);
      u += ch->credit.TakeUsage().utilization_x16;
      masks[i].back() = ch->credit.active();
    }
    usage[i] = snaps[i].usage;
    usage[i].utilization = u;
  }
  const auto targets = DistributeActiveChannels(usage, max_aqp_.load());
  {
    MutexLock g(reg_mu_);
    for (size_t i = 0; i < snaps.size(); ++i) {
      Conn& c = *snaps[i].conn;
      c.last_utilization = usage[i].utilization;
      c.allotment = targets[i];
      c.joined_this_interval = false;
    }
  }
  // Activations first, so that a client never has fewer active channels than it will keep.
  for (int pass = 0; pass < 2; ++pass) {
    const bool activate = pass == 0;
    for (size_t i = 0; i < snaps.size(); ++i) {
      const auto want = SelectActiveChannels(masks[i], targets[i]);
      const auto& channels = snaps[i].channels;
      for (size_t k = 0; k < channels.size(); ++k) {
        const auto& ch = channels[k];
        if (!ch || want[k] == masks[i][k] || want[k] != activate) continue;
        Status st;
        {
          SpinGuard g(ch->mu);
          ch->credit.SetActive(activate);
          st = WriteControl(*ch, false);
        }
        (activate ? n_.activations : n_.deactivations).fetch_add(1, std::memory_order_relaxed);
        if (!st.ok()) {
          CloseConn(snaps[i].conn->id, "writing a channel state change failed: " + st.ToString(), false);
        }
      }
    }
  }
  n_.redistributions.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace rdmq::rpc::internal
