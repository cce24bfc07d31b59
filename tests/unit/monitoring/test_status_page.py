"""The status page against a real Prometheus holding thirty minutes of the lab stack (conftest.py,
backfill.py): each deployment's row with its figures, formatted for people, and its state, from
the alert series (tiny-b: wedged) or from the data (tiny-gguf: up = 0, its alert still pending);
"no data" where Prometheus has nothing, a page all the same where it does not answer."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from components.monitoring import humane
from components.monitoring.__main__ import main
from components.monitoring.status_html import PLOT_W
from components.monitoring.status_page import write_atomically, write_status_page
from tests.unit.monitoring.exposition import REPO, spec
from tests.unit.monitoring.prometheus import free_port


class Rows(HTMLParser):
    """deployment -> {"data-state": the row's state, column -> the cell's text, "svg": the plot's
    polyline and circle tags}; and the header's tally of states."""

    def __init__(self):
        super().__init__()
        self.rows: dict[str, dict[str, str]] = {}
        self.tally: list[str] = []
        self._row = self._col = None
        self._tally_depth = 0       # spans open inside the tally (its badges are spans too)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-deployment" in a:
            self._row = self.rows.setdefault(a["data-deployment"], {"data-state": a["data-state"], "svg": ""})
        elif tag == "td" and self._row is not None:
            self._col = a["data-col"]
            self._row[self._col] = ""
        elif tag == "span" and (self._tally_depth or a.get("class") == "tally"):
            self._tally_depth += 1
        if self._col == "tokens" and tag in ("circle", "polyline"):
            self._row["svg"] += f"<{tag} {' '.join(f'{k}={v}' for k, v in attrs)}>"

    def handle_endtag(self, tag):
        if tag == "td":
            self._col = None
        elif tag == "tr":
            self._row = None
        elif tag == "span" and self._tally_depth:
            self._tally_depth -= 1

    def handle_data(self, data):
        if self._col is not None:
            self._row[self._col] = " ".join(f"{self._row[self._col]} {data}".split())
        elif self._tally_depth and data.strip():
            self.tally.append(data.strip())


def read_page(path: Path) -> Rows:
    parser = Rows()
    parser.feed(path.read_text())
    return parser


@pytest.fixture(scope="module")
def lab_page(lab_prometheus, tmp_path_factory) -> Path:
    """The lab's page as of the last backfilled sample: its figures are the backfill's."""
    path = tmp_path_factory.mktemp("page") / "lab.html"
    status = write_status_page(path, lab_prometheus.url, "lab", spec("lab"), minutes=15, at=lab_prometheus.end)
    assert status.error is None
    return path


def test_each_deployment_has_its_row_figures_and_state(lab_page):
    rows = read_page(lab_page).rows
    assert list(rows) == ["tiny", "tiny-b", "tiny-gguf"]
    tiny, b, gguf = rows["tiny"], rows["tiny-b"], rows["tiny-gguf"]

    assert tiny["data-state"] == "up" and tiny["deployment"] == "tiny vllm on lab-1, lab-2"
    assert tiny["tokens"] == "17.5 tok/s peak 38.8"     # the window's first value: the peak of 42.5 is older
    assert (tiny["ttft"], tiny["kv"], tiny["running"], tiny["waiting"]) == ("488 ms", "75%", "3", "1")
    assert tiny["memory"] == "lab-1 9.8 GiB 61% lab-2 1.2 GiB 7.5%"
    assert tiny["restarts"] == "0 +0 in 15 min"

    # no progress since minute 20 with 2 requests running; no request reached its first token since
    assert (b["data-state"], b["ttft"], b["kv"], b["running"], b["waiting"]) == ("wedged", "no requests", "31%", "2", "4")
    assert b["tokens"].startswith("0 tok/s peak ")
    assert b["memory"] == "lab-2 1.2 GiB 7.5% lab-1 9.8 GiB 61%"     # its head first, as the stack lists them
    assert b["restarts"] == "2 +1 in 15 min"        # restarts at minutes 12 and 17: one in the window

    # its series ended 5 min 15 s ago; llama.cpp records no latency and no KV cache
    assert gguf["data-state"] == "down" and gguf["deployment"] == "tiny-gguf llamacpp on lab-1"
    assert gguf["tokens"].startswith("no data peak ")
    assert (gguf["ttft"], gguf["kv"], gguf["running"], gguf["waiting"]) == ("n/a", "n/a", "no data", "no data")
    assert gguf["memory"] == "lab-1 9.8 GiB 61%"


def test_the_state_says_what_it_was_read_from(lab_page):
    """The badge's word, then why: the firing alert (tiny-b), or the data before the alert fires
    (tiny-gguf: up = 0 for 5 minutes, BwsEngineDown still pending)."""
    page = read_page(lab_page)
    assert {n: r["state"] for n, r in page.rows.items()} == {
        "tiny": "up serving", "tiny-b": "wedged alert BwsEngineWedged firing",
        "tiny-gguf": "down its /metrics does not answer"}
    assert page.tally == ["1 up", "1 wedged", "1 down"]


def test_a_deployment_whose_series_ended_draws_a_gap_not_a_flat_line(lab_page):
    """tiny-gguf's last sample is 5 min 15 s old: its plot ends there (about two thirds across),
    where Prometheus's lookback alone would carry the last value to the right edge."""
    rows = read_page(lab_page).rows
    last_x = {n: float(re.search(r"<circle cx=([\d.]+)", r["svg"]).group(1)) for n, r in rows.items()}
    assert last_x["tiny"] == pytest.approx(PLOT_W, abs=1) and last_x["tiny-b"] == pytest.approx(PLOT_W, abs=1)
    assert 0.5 * PLOT_W < last_x["tiny-gguf"] < 0.85 * PLOT_W, last_x


def test_the_page_is_self_contained_and_its_numbers_are_for_people(lab_page):
    html = lab_page.read_text()
    for outside in ("<script", " src=", " href=", "url(", "@import", "javascript:"):
        assert outside not in html
    text = re.sub(r"<style>.*?</style>|<[^>]+>", " ", html, flags=re.S)
    assert not re.findall(r"\d+\.\d{2,}", text.replace(".0.0.1", "")), "a float with more than one decimal"
    assert "nan" not in text.lower().split()


def test_a_stack_prometheus_knows_nothing_of_says_no_data(lab_prometheus, tmp_path):
    """spark-duo's series are not in this Prometheus: every row says so, none fails."""
    path = tmp_path / "spark-duo.html"
    write_status_page(path, lab_prometheus.url, "spark-duo", spec("spark-duo"), at=lab_prometheus.end)
    rows = read_page(path).rows
    assert rows and {r["data-state"] for r in rows.values()} == {"no data"}
    nodes = {d.name: d.nodes for d in spec("spark-duo").deployments}
    assert list(rows) == list(nodes)
    for name, r in rows.items():
        assert r["tokens"] == "no data" and r["running"] == "no data" and r["restarts"] == "no data"
        assert r["state"] == "no data Prometheus has no series of it"
        assert r["memory"] == " ".join(f"{n} no data no data" for n in nodes[name])


def test_the_cli_writes_the_page_and_exits_1_when_prometheus_does_not_answer(lab_prometheus, tmp_path, capsys):
    page = tmp_path / "lab.html"
    assert main(["--stack", "lab", "--work-dir", str(REPO), "--status-page", str(page),
                 "--prometheus", lab_prometheus.url]) == 0
    assert capsys.readouterr().out.split() == [str(page)]
    assert {n: r["data-state"] for n, r in read_page(page).rows.items()} == {
        "tiny": "up", "tiny-b": "wedged", "tiny-gguf": "down"}
    assert page.stat().st_mode & 0o777 == 0o644

    nobody = f"http://127.0.0.1:{free_port()}"
    assert main(["--stack", "lab", "--work-dir", str(REPO), "--status-page", str(page), "--prometheus", nobody]) == 1
    assert "Prometheus did not answer" in capsys.readouterr().err
    html = page.read_text()
    assert f"Prometheus did not answer: {nobody}" in html
    assert {r["data-state"] for r in read_page(page).rows.values()} == {"no data"}
    assert [p.name for p in tmp_path.iterdir()] == ["lab.html"]     # no temporary file left


def test_an_atomic_write_leaves_the_old_page_when_it_fails(tmp_path, monkeypatch):
    page = tmp_path / "p.html"
    page.write_text("old")

    def refuse(*_):
        raise OSError("disk full")
    monkeypatch.setattr("components.monitoring.status_page.os.replace", refuse)
    with pytest.raises(OSError):
        write_atomically(page, "new")
    assert page.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["p.html"]


@pytest.mark.parametrize("format, value, shown", [
    (humane.rate, 17.5, "17.5"), (humane.rate, 0.4242, "0.42"), (humane.rate, 1234.56, "1,235"),
    (humane.rate, 0.0, "0"), (humane.rate, None, "no data"),
    (humane.seconds, 0.4875, "488 ms"), (humane.seconds, 1.2345, "1.23 s"), (humane.seconds, 42.4, "42 s"),
    (humane.seconds, 300.0, "5.0 min"), (humane.seconds, float("nan"), "no requests"),
    (humane.percent, 0.75, "75%"), (humane.percent, 0.075, "7.5%"), (humane.percent, 0.001, "<1%"),
    (humane.size, 9.8 * 2 ** 30, "9.8 GiB"), (humane.size, 512 * 2 ** 20, "512 MiB"),
    (humane.size, 119.7 * 2 ** 30, "120 GiB"), (humane.count, 1.98, "2"), (humane.count, None, "no data"),
])
def test_figures_for_people(format, value, shown):
    assert format(value) == shown
