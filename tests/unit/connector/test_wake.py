"""The watch (watchdog's, inotify) that wakes the connector's loop, on a real directory: each kind of
change Cassandra makes in cdc_raw wakes it, the connector's own reads do not; once closed, while changes
keep coming, nothing is set or logged (watchdog's emitter logged an error in about one close in five
before `connector.wake` mended its stop); a directory that cannot be watched is said once and wakes
nobody."""
import logging
import os
import threading

import pytest

from connector.wake import DirectoryWatch


def rewrite_index(directory):
    (directory / "CommitLog-7-1_cdc.idx").write_text("4096\n")


def link_segment(directory):
    os.link(directory.parent / "CommitLog-7-2.log", directory / "CommitLog-7-2.log")


def move_in(directory):
    os.rename(directory.parent / "CommitLog-7-2.log", directory / "CommitLog-7-2.log")


def remove_segment(directory):
    (directory / "CommitLog-7-3.log").unlink()


@pytest.mark.parametrize("change", [rewrite_index, link_segment, move_in, remove_segment], ids=lambda f: f.__name__)
def test_each_change_of_the_directory_wakes(tmp_path, change):
    watched = tmp_path / "cdc_raw"
    watched.mkdir()
    (tmp_path / "CommitLog-7-2.log").write_bytes(b"\0" * 16)
    (watched / "CommitLog-7-3.log").write_bytes(b"")
    wake = threading.Event()
    watch = DirectoryWatch(watched, wake).start()
    try:
        assert watch.watching
        change(watched)
        assert wake.wait(10)
    finally:
        watch.close()


def test_nothing_wakes_before_a_change(tmp_path):
    wake = threading.Event()
    watch = DirectoryWatch(tmp_path, wake).start()
    try:
        (tmp_path.parent / f"{tmp_path.name}-sibling").write_text("not in the directory")
        assert not wake.wait(0.3)
    finally:
        watch.close()


def test_reading_a_segment_wakes_nobody(tmp_path):
    segment = tmp_path / "CommitLog-7-3.log"
    segment.write_bytes(b"\0" * 4096)
    wake = threading.Event()
    watch = DirectoryWatch(tmp_path, wake).start()
    try:
        with open(segment, "rb") as file:
            assert len(file.read()) == 4096
        assert not wake.wait(0.3)
    finally:
        watch.close()


def test_close_while_changes_keep_coming_ends_the_thread_and_logs_nothing(tmp_path, caplog):
    wake = threading.Event()
    watch = DirectoryWatch(tmp_path, wake).start()
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            rewrite_index(tmp_path)

    writer = threading.Thread(target=churn)
    writer.start()
    try:
        assert wake.wait(10)
        with caplog.at_level(logging.DEBUG):
            watch.close()
        assert not any(t.name == "ringtail-wake" for t in threading.enumerate())
        wake.clear()
        assert not wake.wait(0.3), "woken after close"
    finally:
        stop.set()
        writer.join()
    assert not caplog.records


def test_a_directory_that_cannot_be_watched_is_said_and_wakes_nobody(tmp_path, caplog):
    wake = threading.Event()
    with caplog.at_level(logging.WARNING, logger="ringtail.connector"):
        watch = DirectoryWatch(tmp_path / "missing", wake).start()
    assert not watch.watching
    assert "missing" in caplog.text and "poll interval" in caplog.text
    watch.close()
    assert not wake.is_set()
