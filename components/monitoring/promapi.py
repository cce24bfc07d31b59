"""Prometheus's HTTP API, read with the standard library alone: an instant query and a range
query, each giving its series as (labels, values). The status page (status_page.py) is its one
user; it runs on the operator's machine, where the project adds no HTTP client to its pins."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

# A page is a handful of small queries: a Prometheus that takes longer is not answering.
TIMEOUT_S = 10.0


class PrometheusError(Exception):
    """Prometheus did not answer, or answered with an error: the message says which."""


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]     # (unix time, value), oldest first


@dataclass(frozen=True)
class Target:
    labels: dict[str, str]
    health: str            # up | down | unknown (not scraped yet)
    error: str


class Prometheus:
    def __init__(self, base_url: str, timeout_s: float = TIMEOUT_S):
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s

    def _get(self, path: str, params: dict[str, str]) -> dict:
        url = f"{self.base_url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as response:
                body = json.load(response)
        except urllib.error.HTTPError as err:
            # Prometheus says why in the body of a 400 or 422 (a bad query): keep its words.
            try:
                body = json.load(err)
            except ValueError:
                raise PrometheusError(f"{url}: HTTP {err.code}") from None
        except (OSError, ValueError) as err:
            raise PrometheusError(f"{self.base_url}: {getattr(err, 'reason', err)}") from None
        if body.get("status") != "success":
            raise PrometheusError(f"{path} {params.get('query')!r}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str, at: float) -> list[Sample]:
        data = self._get("/api/v1/query", {"query": expr, "time": f"{at:.3f}"})
        if data["resultType"] == "scalar":
            return [Sample({}, _number(data["result"][1]))]
        return [Sample(r["metric"], _number(r["value"][1])) for r in data["result"]]

    def targets(self) -> list[Target]:
        """Every active scrape target, with its health."""
        return [Target(t["labels"], t["health"], t.get("lastError", ""))
                for t in self._get("/api/v1/targets", {"state": "active"})["activeTargets"]]

    def query_range(self, expr: str, start: float, end: float, step_s: float) -> list[Series]:
        data = self._get("/api/v1/query_range",
                         {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step_s:g}"})
        return [Series(r["metric"], tuple((float(t), _number(v)) for t, v in r["values"])) for r in data["result"]]


def _number(text: str) -> float:
    """Prometheus sends values as strings, "NaN" (a quantile over no request) and "+Inf" among them."""
    return float(text)
