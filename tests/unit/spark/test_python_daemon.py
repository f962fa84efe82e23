"""The Python workers' daemon re-reads a zip archive on the import path only when it changed on disk."""
from __future__ import annotations

import importlib
import os
import sys
import zipfile
import zipimport

from spark.python_daemon import reread_when_changed


def _archive(path, modules: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        for name, source in modules.items():
            archive.writestr(f"{name}.py", source)


def test_an_unchanged_archive_is_read_once_and_a_changed_one_again(tmp_path):
    path = tmp_path / "lib.zip"
    _archive(path, {"first": "X = 1\n"})
    reads = []

    def invalidate(importer):
        reads.append(importer.archive)

    invalidate_caches = reread_when_changed(invalidate)
    importer = zipimport.zipimporter(str(path))
    for _ in range(5):  # a task each
        invalidate_caches(importer)
    assert reads == [str(path)]

    _archive(path, {"first": "X = 1\n", "second": "Y = 2\n"})
    os.utime(path, ns=(0, path.stat().st_mtime_ns + 1_000_000))  # a new archive, whatever the clock's grain
    invalidate_caches(importer)
    invalidate_caches(importer)
    assert reads == [str(path)] * 2


def test_a_module_added_to_an_archive_is_found_after_invalidate_caches(tmp_path, monkeypatch):
    """What the re-reading is for still works: the daemon's importer sees what a changed archive holds."""
    path = tmp_path / "grown.zip"
    _archive(path, {"ringtail_zip_one": "X = 1\n"})
    monkeypatch.setattr(zipimport.zipimporter, "invalidate_caches",
                        reread_when_changed(zipimport.zipimporter.invalidate_caches))
    monkeypatch.syspath_prepend(str(path))
    assert importlib.import_module("ringtail_zip_one").X == 1
    importlib.invalidate_caches()

    _archive(path, {"ringtail_zip_one": "X = 1\n", "ringtail_zip_two": "Y = 2\n"})
    os.utime(path, ns=(0, path.stat().st_mtime_ns + 1_000_000))
    importlib.invalidate_caches()
    try:
        assert importlib.import_module("ringtail_zip_two").Y == 2
    finally:
        for name in ("ringtail_zip_one", "ringtail_zip_two"):
            sys.modules.pop(name, None)
