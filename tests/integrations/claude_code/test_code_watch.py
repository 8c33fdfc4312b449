"""The resident's watch on hookgate's code (``code_watch.py``): quiet while nothing changes,
and every kind of change in a watched folder is seen by the next call."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from hookgate.integrations.claude_code.code_watch import CodeWatch

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "pkg" / "mod.py"
    path.parent.mkdir()
    path.write_text("x = 1\n")
    return path


def _quiet(watch: CodeWatch) -> CodeWatch:
    assert watch.maybe_changed()  # the first call: the stamps are older than the watch
    assert not watch.maybe_changed()
    return watch


def test_quiet_until_a_write(module: Path) -> None:
    watch = _quiet(CodeWatch([str(module)]))
    module.write_text("x = 2\n")
    assert watch.maybe_changed()
    assert not watch.maybe_changed()  # drained: one change answers once


def test_a_time_stamp_alone_is_a_change(module: Path) -> None:
    watch = _quiet(CodeWatch([str(module)]))
    stat = module.stat()
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert watch.maybe_changed()


def test_a_file_renamed_over_is_a_change(module: Path) -> None:
    """pip and editors write beside and rename over."""
    watch = _quiet(CodeWatch([str(module)]))
    new = module.with_name("mod.py.new")
    new.write_text("x = 3\n")
    watch.maybe_changed()  # the write beside
    os.replace(new, module)
    assert watch.maybe_changed()


def test_a_removed_file_is_a_change(module: Path) -> None:
    watch = _quiet(CodeWatch([str(module)]))
    module.unlink()
    assert watch.maybe_changed()


def test_a_folder_that_cannot_be_watched_always_says_compare(tmp_path: Path) -> None:
    watch = CodeWatch([str(tmp_path / "gone" / "mod.py")])
    assert watch.maybe_changed() and watch.maybe_changed()


def test_a_closed_watch_says_compare(module: Path) -> None:
    watch = _quiet(CodeWatch([str(module)]))
    watch.close()
    assert watch.maybe_changed()


def test_folders_added_later_are_watched(module: Path, tmp_path: Path) -> None:
    """A per-file worker watches the folders of modules an event imported, after it."""
    watch = _quiet(CodeWatch([str(module)]))
    later = tmp_path / "later" / "guard.py"
    later.parent.mkdir()
    later.write_text("y = 1\n")
    watch.add([str(later)])
    assert watch.maybe_changed()  # stamped before its watch began: compare once
    assert not watch.maybe_changed()
    later.write_text("y = 2\n")
    assert watch.maybe_changed()
