"""Streaming a step's progress: which lines are shown, how a pipe is cut into lines while it is
still being written, and the message shape the todo view reads back."""

from __future__ import annotations

import io
import os
import threading

from components.progress import STEP_MESSAGE, ProgressFilter, split_lines, step_reporter
from components.ssh import _drain


def test_filter_shows_log_lines_tenths_and_docker_headers():
    keep = ProgressFilter()
    shown = [keep.accept(line) for line in [
        "[blackwell image x -> lab-2] copying 5300 MiB over the fabric",
        "0.00 B 0:00:00 [0.00 B/s] [>      ]  0%",
        "512MiB 0:00:10 [51.2MiB/s] [=>     ]  9%",
        "1.0GiB 0:00:20 [51.2MiB/s] [==>    ] 19%",
        "1.1GiB 0:00:21 [51.2MiB/s] [==>    ] 20%",
        "1.2GiB 0:00:22 [51.2MiB/s] [==>    ] 21%",
        "some chatter",
        "Loaded image: blackwell-serving/vllm-lab:abc",
        "#7 [2/3] RUN pip install transformers>=5",
    ]]
    assert shown == ["[image x -> lab-2] copying 5300 MiB over the fabric",
                     "0.00 B 0:00:00 [0.00 B/s] [>      ]  0%", None,
                     "1.0GiB 0:00:20 [51.2MiB/s] [==>    ] 19%", "1.1GiB 0:00:21 [51.2MiB/s] [==>    ] 20%", None, None,
                     "Loaded image: blackwell-serving/vllm-lab:abc", "#7 [2/3] RUN pip install transformers>=5"]


def test_split_lines_cuts_at_carriage_returns_and_keeps_the_unfinished_rest():
    assert split_lines("a\r\n10%\rb\n") == (["a", "10%", "b"], "")
    assert split_lines("done\n20%") == (["done"], "20%")


def test_drain_hands_over_lines_while_the_writer_is_still_writing():
    read_fd, write_fd = os.pipe()
    seen: list[str] = []
    chunks: list[bytes] = []
    first_line_seen = threading.Event()

    def on_line(line: str) -> None:
        seen.append(line)
        first_line_seen.set()

    reader = threading.Thread(target=_drain, args=(io.open(read_fd, "rb"), chunks, on_line))
    reader.start()
    os.write(write_fd, b"[blackwell x] started\n 5%\r")
    # The first line arrives before the writer is done: that is what makes it live.
    assert first_line_seen.wait(timeout=10)
    os.write(write_fd, b"50%\rtail without newline")
    os.close(write_fd)
    reader.join(timeout=10)
    assert seen == ["[blackwell x] started", "5%", "50%", "tail without newline"]
    assert b"".join(chunks) == b"[blackwell x] started\n 5%\r50%\rtail without newline"


def test_reporter_sends_named_messages_the_todo_view_can_read_back():
    sent: list[str] = []
    report = step_reporter("tiny-to-lab-2 on lab-1", sent.append)
    for line in ["[blackwell model tiny -> lab-2] copying", "chatter", "42%"]:
        report(line)
    assert sent == ["tiny-to-lab-2 on lab-1: [model tiny -> lab-2] copying", "tiny-to-lab-2 on lab-1: 42%"]
    m = STEP_MESSAGE.match(sent[1])
    assert m.groups() == ("tiny-to-lab-2", "lab-1", "42%")
