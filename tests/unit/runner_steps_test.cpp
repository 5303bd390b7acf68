// The runner's job steps (run/runner_jobs.cpp) with fake ports: wrapper
// messages in, grants and verdicts out, the tick's measure-decide-act,
// with fake job processes and fake cgroup readings. The governor and the
// recorder are the real ones; no process, socket or cgroup anywhere.
#include <signal.h>

#include <gtest/gtest.h>

#include <fmt/core.h>

#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "run/runner_impl.hpp"
#include "support/runner_fakes.hpp"

namespace memgate {

namespace {

RequestMsg request(const std::string& source) {
  RequestMsg m;
  m.argv = {"g++", "-c", source};
  m.cwd = "/src";
  m.tool = "g++";
  m.klass = "g++:compile";
  m.identity = "g++:compile:" + source + "->" + source + ".o";
  m.stem = source;
  return m;
}

ExitMsg exited(int status, double cpu_s = 1.0) {
  ExitMsg m;
  m.status = status;
  m.cpu_s = cpu_s;
  return m;
}

}  // namespace

class RunnerStepsTest : public ::testing::Test {
 protected:
  RunnerStepsTest() {
    use_governor(2, 1 * GiB);
    auto ports = std::make_unique<FakePorts>();
    ports_ = ports.get();
    r_.ports_ = std::move(ports);
  }

  // A fresh governor with 4 GiB, `slots` slots and every job predicted
  // at `peak` from its own history.
  void use_governor(int slots, Bytes peak) {
    GovernorConfig gc;
    gc.budget = 4 * GiB;
    gc.hard_limit = 4 * GiB;
    gc.slots = slots;
    r_.machine_.slots = slots;
    r_.gov_ = std::make_unique<Governor>(
        gc,
        [peak](const JobKey&) {
          Prediction p;
          p.peak = peak;
          p.source = PredictionSource::history;
          p.confidence = 1.0;
          return p;
        },
        [this](const JobRecord& rec) { learned_.push_back(rec.key.identity); });
    gov().on_fact([this](const JobFact& f) { r_.recorder_.observe(f); });
  }

  // Each step is one turn of the loop: its messages, then the admission
  // the loop runs once after them (main_loop).
  void message(ConnId conn, const Message& m) { r_.on_message(conn, m); end_turn(); }
  void hang_up(ConnId conn) { r_.on_closed(conn); end_turn(); }
  void tick() { r_.tick(); end_turn(); }
  void end_turn() { if (r_.pace_.take_scheduled()) r_.schedule_now(); }
  bool prepare_jobs() { return r_.prepare_jobs(); }
  void scan_ungated() { r_.scan_ungated(r_.now()); }
  ConnectedJob& connected(ConnId conn) {
    ConnectedJob* job = r_.live_.find(conn);
    if (!job) throw std::out_of_range("no job on connection " + std::to_string(conn));
    return *job;
  }
  JobId job_of(ConnId conn) { return connected(conn).id; }
  Governor& gov() { return *r_.gov_; }
  const GovJob& gov_job(ConnId conn) { return gov().job(job_of(conn)); }
  void apply(const Decisions& d) { r_.apply(d); }
  double now() const { return r_.now(); }
  // The runner's clock jumps ahead, as over a tick that came late.
  void skip_ahead(std::chrono::steady_clock::duration d) { r_.t0_ -= d; }
  FakeJobState& os(ConnId conn) { return *ports_->jobs.at(job_of(conn)); }
  auto extra(Counter c) { return r_.extra_counters_[c]; }
  std::size_t live() const { return r_.live_.size(); }
  std::size_t finished() const { return r_.recorder_.finished_jobs(); }
  Bytes recorded_peak() const { return r_.recorder_.peak_used(); }
  const std::vector<Message>& sent(ConnId conn) { return ports_->sent[conn]; }
  template <class M>
  const M& last(ConnId conn) {
    EXPECT_FALSE(sent(conn).empty());
    const M* m = std::get_if<M>(&sent(conn).back());
    EXPECT_NE(m, nullptr) << "the last message to " << conn << " is " << message_type(sent(conn).back());
    static const M none{};
    return m ? *m : none;
  }
  // A job granted and started: its wrapper asked, the tick admitted it and
  // its program runs as pid `pid`.
  void start(ConnId conn, const std::string& source, pid_t pid) {
    message(conn, request(source));
    tick();
    ASSERT_NE(std::get_if<GrantMsg>(&sent(conn).back()), nullptr);
    message(conn, StartedMsg{pid});
  }

  Runner r_{RunOptions{}};
  FakePorts* ports_ = nullptr;
  std::vector<std::string> learned_;
};

TEST_F(RunnerStepsTest, TheFirstRequestWaitsForItsBurstAndTheTickGrantsIt) {
  message(1, request("a.cpp"));
  EXPECT_TRUE(sent(1).empty()) << "the build's first burst is gathered before anything is admitted";
  EXPECT_EQ(gov_job(1).state, JobState::waiting);
  tick();
  const GrantMsg& g = last<GrantMsg>(1);
  EXPECT_EQ(g.job, job_of(1));
  EXPECT_EQ(g.attempt, 1);
  EXPECT_EQ(g.cgroups, std::vector<std::string>{"/fake/job"});
  EXPECT_FALSE(g.decline);
  EXPECT_EQ(os(1).prepared, 1);
  EXPECT_EQ(gov_job(1).state, JobState::running);
  EXPECT_EQ(gov_job(1).key.identity, "g++:compile:a.cpp->a.cpp.o");
}

TEST_F(RunnerStepsTest, AfterTheFirstAdmissionAShortJobIsGrantedAtOnce) {
  start(1, "a.cpp", 501);
  message(2, request("b.cpp"));
  EXPECT_EQ(sent(2).size(), 1u) << "a job of unknown length needs no tick once the build has begun";
  last<GrantMsg>(2);
}

TEST_F(RunnerStepsTest, ATruncatedCommandIsRecordedAsSuch) {
  RequestMsg m = request("a.cpp");
  m.argv_truncated = true;
  message(1, m);
  EXPECT_EQ(connected(1).req.argv.back(), "[argv truncated]");
}

TEST_F(RunnerStepsTest, AStartedPidOutsideTheWrapperIsRefused) {
  message(1, request("a.cpp"));
  tick();
  ports_->descends = false;
  message(1, StartedMsg{1});
  EXPECT_EQ(extra(Counter::refused_pid), 1);
  EXPECT_EQ(os(1).child, 0) << "memgate freezes and kills what a job names: only a pid below its wrapper";
  ports_->descends = true;
  message(1, StartedMsg{501});
  EXPECT_EQ(os(1).child, 501);
  EXPECT_EQ(extra(Counter::unjoined), 0);
}

// Under load the wrapper's "started" is read after a short program has
// ended and been reaped: not an attack, and not counted as one.
TEST_F(RunnerStepsTest, AStartedPidThatHasAlreadyEndedIsNotRefused) {
  message(1, request("a.cpp"));
  tick();
  ports_->descends = false;
  ports_->alive = false;
  message(1, StartedMsg{1});
  EXPECT_EQ(extra(Counter::refused_pid), 0);
  EXPECT_EQ(os(1).child, 0);
}

TEST_F(RunnerStepsTest, AChildThatCouldNotJoinItsCgroupIsCounted) {
  message(1, request("a.cpp"));
  tick();
  ports_->jobs.at(job_of(1))->joined = false;
  message(1, StartedMsg{501});
  EXPECT_EQ(extra(Counter::unjoined), 1);
}

TEST_F(RunnerStepsTest, AnExitEndsTheJobWithAVerdictAndARecord) {
  start(1, "a.cpp", 501);
  os(1).mem = JobMemory{0, 700 * MiB};
  message(1, exited(0));
  EXPECT_FALSE(last<VerdictMsg>(1).rerun);
  EXPECT_EQ(gov_job(1).state, JobState::done);
  EXPECT_EQ(os(1).ended, 1);
  EXPECT_EQ(finished(), 1u);
  EXPECT_EQ(learned_, std::vector<std::string>{"g++:compile:a.cpp->a.cpp.o"});
  // A repeated exit (a confused or hostile wrapper) changes nothing.
  message(1, exited(0));
  EXPECT_EQ(sent(1).size(), 2u);
  EXPECT_EQ(finished(), 1u);
}

TEST_F(RunnerStepsTest, AMessageOfTheWrongKindClosesTheConnectionAndEndsItsJob) {
  start(1, "a.cpp", 501);
  message(1, VerdictMsg{});  // the runner's own kind: no wrapper sends it
  EXPECT_EQ(ports_->closed, std::vector<ConnId>{1});
  EXPECT_EQ(live(), 0u);
  EXPECT_EQ(ports_->jobs.begin()->second->kills, 1) << "what the job started is killed, not orphaned";
}

TEST_F(RunnerStepsTest, ASecondRequestOnOneConnectionClosesIt) {
  message(1, request("a.cpp"));
  message(1, request("b.cpp"));
  EXPECT_EQ(ports_->closed, std::vector<ConnId>{1});
  EXPECT_EQ(live(), 0u);
}

TEST_F(RunnerStepsTest, AWrapperGoneWithoutAVerdictHasItsJobKilled) {
  start(1, "a.cpp", 501);
  JobId id = job_of(1);
  hang_up(1);
  EXPECT_EQ(ports_->jobs.at(id)->kills, 1);
  EXPECT_EQ(gov().job(id).state, JobState::done);
  EXPECT_EQ(live(), 0u);
  EXPECT_TRUE(ports_->closed.empty()) << "the server closed it already";
}

TEST_F(RunnerStepsTest, TheTickMeasuresJobsAndTheBuild) {
  start(1, "a.cpp", 501);
  os(1).mem = JobMemory{300 * MiB, 400 * MiB};
  ports_->view.build_used = 350 * MiB;
  tick();
  EXPECT_EQ(gov_job(1).run.current, 300 * MiB);
  EXPECT_EQ(gov_job(1).run.attempt_peak, 400 * MiB);
  EXPECT_EQ(recorded_peak(), 350 * MiB);
  EXPECT_EQ(connected(1).profile.back().bytes, 300 * MiB);
  EXPECT_EQ(ports_->idle_drops, 2);
}

// With room to spare a job's memory is read every half second, not every
// tick (the ticks here come microseconds apart); once the build uses half
// its limit, every tick.
TEST_F(RunnerStepsTest, WithRoomAJobIsReadLessOftenAndNearTheLimitEveryTick) {
  start(1, "a.cpp", 501);
  os(1).mem = JobMemory{300 * MiB, 300 * MiB};
  ports_->view.build_used = 300 * MiB;
  for (int i = 0; i < 5; ++i) tick();
  EXPECT_EQ(os(1).samples, 1) << "read once, then not again within half a second";
  ports_->view.build_used = 2500 * MiB;  // of 4 GiB
  tick();                                // reads the build's use
  const int before = os(1).samples;
  tick();
  tick();
  EXPECT_EQ(os(1).samples, before + 2);
}

// A wave of jobs granted together is read a share per tick, and a tick
// that comes late (every job due by then) still reads only its share: the
// reads stay spread over the ticks, not gathered into one.
TEST_F(RunnerStepsTest, WithRoomATickReadsItsShareOfTheJobsInTurnEvenWhenLate) {
  use_governor(10, 100 * MiB);
  for (ConnId c = 1; c <= 10; ++c) message(c, request(fmt::format("s{}.cpp", c)));
  tick();
  for (ConnId c = 1; c <= 10; ++c) {
    ASSERT_NE(std::get_if<GrantMsg>(&sent(c).back()), nullptr);
    message(c, StartedMsg{500 + static_cast<pid_t>(c)});
  }
  ports_->view.build_used = 200 * MiB;
  auto reads = [&] {
    int n = 0;
    for (ConnId c = 1; c <= 10; ++c) n += os(c).samples;
    return n;
  };
  tick();
  EXPECT_EQ(reads(), 1) << "a tenth of the running jobs";
  for (int i = 0; i < 9; ++i) tick();
  for (ConnId c = 1; c <= 10; ++c) EXPECT_EQ(os(c).samples, 1) << "conn " << c;
  tick();
  EXPECT_EQ(reads(), 10) << "none is due again within a second";
  skip_ahead(std::chrono::seconds(3));  // the next tick is late: every job is due
  tick();
  EXPECT_EQ(reads(), 11);
  tick();
  EXPECT_EQ(reads(), 12) << "the late tick's jobs were not all read at once, so their turns stay spread";
}

// Reads that take long (a kernel busy with a wave of jobs joining and
// leaving their cgroups) end the tick's turn early; the next tick goes on
// from there.
TEST_F(RunnerStepsTest, WithRoomATickStopsReadingJobsAfterItsTimeBudget) {
  use_governor(40, 100 * MiB);
  for (ConnId c = 1; c <= 40; ++c) message(c, request(fmt::format("s{}.cpp", c)));
  tick();
  for (ConnId c = 1; c <= 40; ++c) {
    message(c, StartedMsg{500 + static_cast<pid_t>(c)});
    os(c).on_sample = [this] { skip_ahead(std::chrono::milliseconds(3)); };
  }
  ports_->view.build_used = 200 * MiB;
  auto read = [&] {
    std::vector<ConnId> out;
    for (ConnId c = 1; c <= 40; ++c)
      if (os(c).samples > 0) out.push_back(c);
    return out;
  };
  tick();
  EXPECT_EQ(read(), (std::vector<ConnId>{1, 2})) << "its share is four, its time was up after two";
  tick();
  EXPECT_EQ(read(), (std::vector<ConnId>{1, 2, 3, 4}));
}

// The ungated scan is a loop turn of its own, every half second: it
// decides nothing the tick needs, so it does not lengthen one.
TEST_F(RunnerStepsTest, TheUngatedScanIsNotPartOfATick) {
  start(1, "a.cpp", 501);
  tick();
  EXPECT_EQ(ports_->build_reads, 0);
  scan_ungated();
  EXPECT_EQ(ports_->build_reads, 1);
  scan_ungated();
  EXPECT_EQ(ports_->build_reads, 1) << "not again within half a second";
  skip_ahead(std::chrono::seconds(1));
  scan_ungated();
  EXPECT_EQ(ports_->build_reads, 2);
}

// While the loop is idle, job cgroups are made ready for the jobs that
// wait, at most as many as there are slots.
TEST_F(RunnerStepsTest, IdleWorkReadiesTheOsSideOfTheJobsThatWaitUpToTheSlots) {
  for (ConnId c = 1; c <= 3; ++c) message(c, request(fmt::format("s{}.cpp", c)));
  tick();  // two start
  prepare_jobs();
  ASSERT_EQ(ports_->prepared_for.size(), 1u);
  EXPECT_EQ(ports_->prepared_for.back(), 1u) << "one waits";
  for (ConnId c = 4; c <= 6; ++c) message(c, request(fmt::format("s{}.cpp", c)));
  prepare_jobs();
  ASSERT_EQ(ports_->prepared_for.size(), 2u);
  EXPECT_EQ(ports_->prepared_for.back(), 2u) << "four wait, two slots";
}

TEST_F(RunnerStepsTest, TheTickFreezesTheNewestJobWhenMemoryRunsShortAndThawsItLater) {
  start(1, "a.cpp", 501);
  start(2, "b.cpp", 502);
  os(1).mem = JobMemory{1900 * MiB, 1900 * MiB};
  os(2).mem = JobMemory{1900 * MiB, 1900 * MiB};
  ports_->view.build_used = 3850 * MiB;  // above the freeze line (92%), below the kill line
  tick();
  EXPECT_TRUE(os(2).frozen);
  EXPECT_FALSE(os(1).frozen);
  EXPECT_EQ(gov_job(2).state, JobState::frozen);
  // The first job ends; memory is low again and stays so.
  message(1, exited(0));
  ports_->view.build_used = 1 * GiB;
  // The governor's thaw hold, on its own clock: steps later in time.
  for (int i = 1; i <= 20 && os(2).frozen; ++i) apply(gov().step(ports_->view, now() + i));
  EXPECT_FALSE(os(2).frozen);
}

TEST_F(RunnerStepsTest, AFreezeTheJobCannotTakeIsUndone) {
  start(1, "a.cpp", 501);
  start(2, "b.cpp", 502);
  os(2).freezable = false;
  ports_->view.build_used = 3850 * MiB;
  tick();
  EXPECT_NE(gov_job(2).state, JobState::frozen);
}

TEST_F(RunnerStepsTest, AJobKilledUnderPressureIsRerunAndItsCpuCounted) {
  start(1, "a.cpp", 501);
  start(2, "b.cpp", 502);
  os(1).mem = JobMemory{2 * GiB, 2 * GiB};
  os(2).mem = JobMemory{2 * GiB, 2 * GiB};
  ports_->view.build_used = 4 * GiB;  // past the kill line
  ports_->cpu_s = 7.5;
  tick();
  ASSERT_EQ(os(2).kills, 1);
  EXPECT_TRUE(connected(2).killed_by_us);
  EXPECT_DOUBLE_EQ(connected(2).cpu_at_kill_s, 7.5);
  // The wrapper reports the SIGKILL; its rusage missed the compiler proper.
  message(2, exited(SIGKILL, 0.1));
  EXPECT_TRUE(last<VerdictMsg>(2).rerun);
  EXPECT_EQ(gov_job(2).state, JobState::waiting);
  EXPECT_EQ(gov_job(2).queue.requeues, 1);
  EXPECT_FALSE(connected(2).killed_by_us) << "the next attempt starts clean";
  EXPECT_EQ(finished(), 0u) << "only a job's last attempt goes into the build";
}

TEST_F(RunnerStepsTest, AKernelOomKillIsToldApartFromOurs) {
  start(1, "a.cpp", 501);
  os(1).oom = true;
  message(1, exited(SIGKILL));
  ASSERT_FALSE(gov().events().empty());
  bool oom = false;
  for (const GovEvent& e : gov().events()) oom = oom || e.kind == EventKind::oom_kill;
  EXPECT_TRUE(oom);
}

}  // namespace memgate
