"""Per-file durations at the end of every run (setup, call and teardown of its tests, module
fixtures included): where the suite's time goes, file by file, without a second run."""

from __future__ import annotations

from collections import defaultdict

_seconds: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    _seconds[report.nodeid.split("::", 1)[0]] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _seconds:
        return
    total = sum(_seconds.values())
    terminalreporter.section("time per file (setup + call + teardown)")
    shown = sorted(_seconds.items(), key=lambda kv: -kv[1])
    for path, seconds in shown[:40]:
        terminalreporter.write_line(f"{seconds:8.1f} s  {path}")
    if len(shown) > 40:
        rest = sum(s for _, s in shown[40:])
        terminalreporter.write_line(f"{rest:8.1f} s  ({len(shown) - 40} more files)")
    terminalreporter.write_line(f"{total:8.1f} s  all {len(shown)} files")
