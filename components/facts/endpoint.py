"""An HTTP endpoint as its node itself sees it: the status code (000: no answer), read by
templates/scripts/facts/endpoint.sh.j2."""

from __future__ import annotations

from dataclasses import dataclass

from components.facts.base import Fact, value

FACT = Fact("url", "urls", "scripts/facts/endpoint.sh.j2", "endpoint", value, ("-w '%{http_code}' \"$1\"",))


@dataclass(frozen=True)
class EndpointAnswers:
    node: str
    url: str

    def watch(self):
        return [(self.node, "urls", self.url)]

    def drift(self, facts):
        status = facts[self.node].urls.get(self.url, "000")
        if status != "200":
            return f"drift: {self.url} not answering" + (f" (HTTP {status})" if status != "000" else "")
        return None
