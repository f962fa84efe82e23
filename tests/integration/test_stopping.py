"""Stopping a subscription on the real stack, as an operator does it, while a backlog keeps every
micro-batch busy: a pause, a hand-back to a second runner, a cancel and SIGTERM each let the running
batch finish and start none after it, interrupt nothing (no Java error in the runners' logs) and lose
nothing; a runner whose checkpoint is not the one that wrote a sink is refused by the sink's ledger
instead of skipping batches; and a runner frozen past its leases writes nothing twice when it wakes."""
from __future__ import annotations

import calendar
import json
import signal
import time
import uuid
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from cassandra.concurrent import execute_concurrent_with_args

from deploy.local.receiver import Receiver
from spark.subscriptions.leases import Leases
from spark.subscriptions.model import Change
from spark.subscriptions.statements import Statement
from tests.integration.delivered import delta_ids, pg_ids
from tests.integration.serving import CUT_BATCH, runner_process
from tests.support import wait_for

pytestmark = pytest.mark.integration

NO_NEW_BATCH = "query subscription-{name}: no micro-batch starts after the running one"


def insert(cql, keyspace: str, ids) -> None:
    statement = cql.prepare(f"INSERT INTO {keyspace}.orders (id, qty, note) VALUES (?, ?, ?)")
    execute_concurrent_with_args(cql, statement, [(i, i * 100, f"n{i}") for i in ids], concurrency=64)


def records(log: Path) -> list[dict]:
    """The runner's own log records (JSON lines; Spark's lines are not)."""
    out = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def logged_at(log: Path, message: str, since: float = 0.0) -> float | None:
    """When the runner first logged `message` from `since` on, as a Unix time; None before it has."""
    for record in records(log):
        if record["message"] == message:
            whole, millis = record["time"].rstrip("Z").split(".")
            at = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + int(millis) / 1000
            if at >= since - 0.01:  # the log keeps milliseconds
                return at
    return None


def planned_after(checkpoint: Path, moment: float, until: float = float("inf")) -> list[int]:
    """The micro-batches Spark planned (wrote the offsets of) between `moment` and `until`."""
    folder = checkpoint / "offsets"
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit() and moment < p.stat().st_mtime < until)


class Posts:
    """What the HTTP sink posted, per subscription: each request's batch and arrival time."""

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    def of(self, name: str) -> list[tuple[int, float, dict]]:
        out = []
        for r in list(self.receiver.requests):
            if r["headers"]["ringtail-content"] != "log-rows" or r["status"] != 200:
                continue
            app, batch, _offsets, _content, _part, _chunk = r["headers"]["idempotency-key"].split(":")
            if app == f"{name}.1":
                out.append((int(batch), r["at"], r))
        return out

    def batches(self, name: str) -> set[int]:
        return {batch for batch, _, _ in self.of(name)}

    def ids(self, name: str) -> Counter:
        """How many times each row id reached the receiver, repeats of a key dropped (as a receiver does)."""
        accepted: dict[str, list] = {}
        for _, _, r in self.of(name):
            accepted.setdefault(r["headers"]["idempotency-key"], r["body"])
        return Counter(row["key"]["id"] for body in accepted.values() for row in body)


def answering_after(delay: float):
    """The receiver's answer to a chunk, after `delay` seconds."""
    def answer(request: dict):
        request["at"] = time.time()
        return 200, b"{}", delay
    return answer


# A chunk of 100 rows takes 0.4 s: a batch of 600 rows, 2.4 s or more. Few slow batches rather than many quick
# ones keep a backlog lasting as long for less of the runners' CPU (each batch costs some). Once nothing is to be
# stopped mid-backlog, the rest goes as fast as the runners post it.
slowly, promptly = answering_after(0.4), answering_after(0)


@pytest.fixture
def receiver():
    receiver = Receiver()
    receiver.answer_with = slowly
    yield receiver
    receiver.close()


def stopped_cleanly(log: Path, checkpoint: Path, name: str, posts: Posts, commanded: float,
                    until: float = float("inf")) -> float:
    """Check that `name`'s query, told to stop at `commanded`, started no micro-batch after the runner
    decided (before `until`: another runner taking it over), and posted for one batch at most after it;
    return how long after the command its last post came."""
    decided = wait_for(lambda: logged_at(log, NO_NEW_BATCH.format(name=name), commanded), 60, f"{name}: stop decided")
    # A trigger that had passed Spark's state check just before the decision still plans its batch
    # (spark.delivery.stopping): at most that one, and it runs whole.
    started = planned_after(checkpoint, decided, until)
    assert len(started) <= 1, f"batches {started} of {name} planned after the stop was decided"
    late = {batch for batch, at, _ in posts.of(name) if decided < at < until}
    assert len(late) <= 1 + len(started), f"batches {sorted(late)} of {name} posted after the stop was decided"
    return max(at for _, at, _ in posts.of(name) if at < until) - commanded


def test_pause_hand_back_cancel_and_sigterm_stop_after_the_running_batch(cql, keyspace, served, stack, tmp_path,
                                                                         receiver):
    control, registry, _, base = served
    posts = Posts(receiver)
    table, rows = f"{keyspace}.orders", 6000
    insert(cql, keyspace, range(rows))
    for name in ("s1", "s2"):
        control.create(name, Change(table=table, sink="http", start="earliest",
                                    sink_config={"url": receiver.url, "batch_size": "100"}))
    checkpoint = {name: Path(base["checkpoint_dir"]) / name / "epoch-1" for name in ("s1", "s2")}
    settings = dict(max_offsets_per_trigger=600, log_format="json")
    logs = {r: tmp_path / f"runner-{r}.log" for r in ("a", "b")}
    runners = {"a": runner_process(stack, base, tmp_path, "a", **settings)}
    leases = Leases(cql, registry.keyspace, "probe", 5)
    try:
        wait_for(lambda: len(posts.batches("s1")) >= 2, 240, "two batches of s1 posted")

        paused_at = time.time()
        control.run(Statement("pause", "s1"))
        after = stopped_cleanly(logs["a"], checkpoint["s1"], "s1", posts, paused_at)
        wait_for(lambda: "s1" not in leases.holders(), 60, "the paused s1 let go")
        print(f"\npause → last post of s1: {after:.1f} s")
        delivered = sum(posts.ids("s1").values())
        time.sleep(3)  # six triggers: a query still running would have posted by now
        assert sum(posts.ids("s1").values()) == delivered < rows

        control.run(Statement("resume", "s1"))
        wait_for(lambda: sum(posts.ids("s1").values()) > delivered, 120, "s1 delivering again")

        # A second runner: the first holds both, and hands one back while its backlog lasts.
        runners["b"] = runner_process(stack, base, tmp_path, "b", **settings)
        handed = wait_for(lambda: next((r["message"].split()[2] for r in records(logs["a"])
                                        if r["message"].startswith("handing subscription")), None),
                          180, "a subscription handed back")
        handed_at = logged_at(logs["a"], next(r["message"] for r in records(logs["a"])
                                              if r["message"].startswith("handing subscription")))
        claimed = wait_for(lambda: logged_at(logs["b"], f"claimed subscription {handed}"), 120,
                           f"{handed} claimed by b")
        after = stopped_cleanly(logs["a"], checkpoint[handed], handed, posts, handed_at, until=claimed)
        print(f"hand-back → last post of {handed} from a: {after:.1f} s")
        assert sum(posts.ids(handed).values()) < rows, "the backlog ended before the hand-back"

        receiver.answer_with = promptly
        for name in ("s1", "s2"):
            wait_for(lambda: sum(posts.ids(name).values()) >= rows, 300, f"all of {name} delivered")
            assert posts.ids(name) == Counter(range(rows)), f"{name}: a row lost or delivered twice"

        # A second backlog: s1 cancelled and both runners sent SIGTERM while it lasts.
        receiver.answer_with = slowly
        insert(cql, keyspace, range(rows, 2 * rows))
        wait_for(lambda: sum(posts.ids("s1").values()) > rows, 120, "s1 delivering the second backlog")
        holder = leases.holders()["s1"]
        cancelled_at = time.time()
        control.run(Statement("cancel", "s1"))
        after = stopped_cleanly(logs[holder], checkpoint["s1"], "s1", posts, cancelled_at)
        wait_for(lambda: "s1" not in leases.holders(), 60, "the cancelled s1 let go")
        print(f"cancel → last post of s1: {after:.1f} s")
        assert sum(posts.ids("s1").values()) < 2 * rows, "the backlog ended before the cancel"

        wait_for(lambda: sum(posts.ids("s2").values()) > rows, 120, "s2 delivering the second backlog")
        holder, terminated_at = leases.holders()["s2"], time.time()
        for runner_id, process in runners.items():
            process.send_signal(signal.SIGTERM)
        for runner_id, process in runners.items():
            assert process.wait(120) == 0, f"runner {runner_id} did not exit cleanly"
        after = stopped_cleanly(logs[holder], checkpoint["s2"], "s2", posts, terminated_at)
        print(f"SIGTERM → last post of s2: {after:.1f} s")
        assert leases.holders() == {}
        assert sum(posts.ids("s2").values()) < 2 * rows, "the backlog ended before SIGTERM"

        receiver.answer_with = promptly
        logs["c"] = tmp_path / "runner-c.log"
        runners["c"] = runner_process(stack, base, tmp_path, "c", **settings)
        wait_for(lambda: sum(posts.ids("s2").values()) >= 2 * rows, 300, "the rest of s2 from a new runner")
        assert posts.ids("s2") == Counter(range(2 * rows)), "s2: a row lost or delivered twice"
        runners["c"].send_signal(signal.SIGTERM)
        assert runners["c"].wait(120) == 0
        for runner_id, log in logs.items():
            text = log.read_text(errors="replace")
            assert not [cut for cut in CUT_BATCH if cut in text], f"runner {runner_id} logged a cut batch"
            assert not [r for r in records(log) if r["level"] == "error"], f"runner {runner_id} logged an error"
    finally:
        for process in runners.values():
            if process.poll() is None:
                process.kill()
                process.wait(30)


def test_a_runner_with_another_checkpoint_is_refused_by_the_ledger_and_skips_nothing(cql, keyspace, served, stack,
                                                                                     tmp_path):
    control, registry, _, base = served
    schema = f"ledger_{uuid.uuid4().hex[:8]}"
    control.create("pg", Change(table=f"{keyspace}.orders", sink="postgres", start="earliest",
                                sink_config={"dsn": stack.postgres_dsn, "schema": schema}))
    settings = dict(max_offsets_per_trigger=50, log_format="json")
    other = tmp_path / "another-checkpoint"
    started = []

    def runner(runner_id: str, **more):
        started.append(runner_process(stack, base, tmp_path, runner_id, **{**settings, **more}))
        return started[-1]

    def stopped(process) -> None:
        process.send_signal(signal.SIGTERM)
        assert process.wait(120) == 0

    try:
        insert(cql, keyspace, range(200))
        first = runner("first")
        wait_for(lambda: len(pg_ids(stack.postgres_dsn, schema)) == 200, 240, "200 rows from the first runner")
        stopped(first)

        insert(cql, keyspace, range(200, 300))
        # Batches of another size: its batch 0 cannot cover the offsets of the first runner's batch 0 (which
        # the ledger would rightly take for a replay, as it did when both planned 50 of the same 200).
        stray = runner("stray", checkpoint_dir=str(other), max_offsets_per_trigger=40)
        failing = wait_for(lambda: (s := registry.get("pg")).state == "failing" and s, 180, "pg failing")
        assert "batch 0 of pg.1" in failing.last_error and "checkpoint_dir" in failing.last_error
        stopped(stray)
        assert (other / "pg" / "epoch-1" / "offsets" / "0").exists()  # the stray runner did read a batch
        # Nothing twice, and the new rows were not skipped: they are still to come.
        assert pg_ids(stack.postgres_dsn, schema) == Counter(range(200))

        back = runner("back")
        wait_for(lambda: len(pg_ids(stack.postgres_dsn, schema)) == 300, 240, "the rest from the shared checkpoint")
        assert pg_ids(stack.postgres_dsn, schema) == Counter(range(300))
        wait_for(lambda: registry.get("pg").state == "active", 60, "pg active again")
        stopped(back)
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait(30)
        with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def test_a_runner_paused_past_its_lease_and_resumed_after_another_took_over_writes_nothing_twice(
        cql, keyspace, served, stack, tmp_path):
    """A runner stopped (SIGSTOP: a long GC pause, a frozen VM) in the middle of a backlog loses its leases;
    another runner claims its subscriptions and delivers from their checkpoints. When the first one wakes,
    whatever batch it was writing meets what the second wrote of it: PostgreSQL's ledger and Delta's
    idempotent commits refuse the repeat, Spark's checkpoint refuses its next batch, and it stops each
    subscription at its next renewal. Each sink holds each change once, and delivery goes on."""
    control, registry, _, base = served
    table, schema, lake = f"{keyspace}.orders", f"{keyspace}_pause", tmp_path / "lake"
    control.create("pg", Change(table=table, sink="postgres", sink_config={"dsn": stack.postgres_dsn,
                                                                         "schema": schema}))
    control.create("dl", Change(table=table, sink="delta", sink_config={"path": str(lake)}))
    leases = Leases(cql, registry.keyspace, "probe", 5)

    def delivered() -> tuple[Counter, Counter]:
        return pg_ids(stack.postgres_dsn, schema), delta_ids(lake)

    rows = 2_000
    settings = {"lease_ttl": 6, "max_offsets_per_trigger": 400}
    runners = {"a": runner_process(stack, base, tmp_path, "a", **settings)}
    log_a = tmp_path / "runner-a.log"
    try:
        wait_for(lambda: leases.holders() == {"pg": "a", "dl": "a"}, 120, "runner a holding both subscriptions")
        insert(cql, keyspace, [0])
        wait_for(lambda: all(len(ids) == 1 for ids in delivered()), 120, "row 0 in both sinks")
        insert(cql, keyspace, range(1, rows))
        # Paused while it delivers the backlog, 400 changes a batch: a batch is under way in each.
        wait_for(lambda: all(len(ids) >= 400 for ids in delivered()), 120, "a batch of the backlog delivered")
        runners["a"].send_signal(signal.SIGSTOP)
        paused_with = delivered()
        runners["b"] = runner_process(stack, base, tmp_path, "b", **settings)
        wait_for(lambda: leases.holders() == {"pg": "b", "dl": "b"}, 120, "runner b holding both subscriptions")
        wait_for(lambda: all(len(ids) == rows for ids in delivered()), 300, "the backlog in both sinks, by b")
        runners["a"].send_signal(signal.SIGCONT)
        wait_for(lambda: log_a.read_text(errors="replace").count("lost (expired or taken)") >= 2, 120,
                 "runner a stopping both subscriptions")
        insert(cql, keyspace, [rows])  # delivery goes on from where b got to
        wait_for(lambda: all(len(ids) == rows + 1 for ids in delivered()), 120, "a row written after a woke")
        time.sleep(5)  # time for a late write of a's to show
        for ids in delivered():
            assert ids == Counter(range(rows + 1)), "a change lost or delivered twice"
        assert all(len(ids) < rows for ids in paused_with), paused_with  # a was paused with work to do
        # Its queries ended when their checkpoints refused its batch (Spark's offset log has one writer) or at its
        # renewal; awake, it is a runner like b again and may be handed one of the two. Neither is failing.
        assert set(leases.holders()) == {"pg", "dl"}
        assert {registry.get(name).state for name in ("pg", "dl")} == {"active"}
        assert "failed (attempt" not in log_a.read_text(errors="replace")  # its refused batches are not failures
    finally:
        for process in runners.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
                process.wait(30)
        with psycopg.connect(stack.postgres_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
