"""Generations given to the sinks in the background (`spark.delivery.publications`): once per version and
target, versions in order, a failure raised to the writer waiting and tried again."""
from __future__ import annotations

import threading

import pytest

from spark.delivery.publications import Publications

WAIT = 5.0


class Publication:
    """A publication this test holds open until it lets it go; it records when it runs."""

    def __init__(self, name: str, ran: list[str], fails: bool = False) -> None:
        self.name, self.ran, self.fails = name, ran, fails
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self) -> None:
        self.started.set()
        self.release.wait(WAIT)
        self.ran.append(self.name)
        if self.fails:
            raise ConnectionError(f"{self.name}: sink unreachable")


def test_a_version_is_published_once_per_target_however_many_writers_ask():
    ran: list[str] = []
    publications = Publications()
    first, second = Publication("first", ran), Publication("second", ran)
    future = publications.publish("delta:/lake", 1, first)
    assert publications.publish("delta:/lake", 1, second) is future
    first.release.set()
    future.result(WAIT)
    assert publications.publish("delta:/lake", 1, second).result(WAIT) is None
    assert ran == ["first"]


def test_a_new_version_reaches_its_target_after_the_one_under_way():
    ran: list[str] = []
    publications = Publications()
    old, new = Publication("v1", ran), Publication("v2", ran)
    publications.publish("delta:/lake", 1, old)
    newer = publications.publish("delta:/lake", 2, new)
    new.release.set()
    assert not new.started.wait(0.2)  # v2 waits for v1, which is still held open
    old.release.set()
    newer.result(WAIT)
    assert ran == ["v1", "v2"]


def test_targets_are_published_independently():
    ran: list[str] = []
    publications = Publications()
    held, other = Publication("held", ran), Publication("other", ran)
    publications.publish("delta:/lake", 1, held)
    other.release.set()
    publications.publish("postgresql:db", 1, other).result(WAIT)
    assert ran == ["other"]
    held.release.set()


def test_a_failed_publication_is_raised_to_the_writer_and_tried_again(caplog):
    ran: list[str] = []
    publications = Publications()
    failing, retry = Publication("failing", ran, fails=True), Publication("retry", ran)
    failing.release.set()
    with pytest.raises(ConnectionError, match="sink unreachable"):
        publications.publish("delta:/lake", 1, failing).result(WAIT)
    assert "publishing the CDC generations to the sink failed" in caplog.text
    retry.release.set()
    assert publications.publish("delta:/lake", 1, retry).result(WAIT) is None
    assert ran == ["failing", "retry"]
