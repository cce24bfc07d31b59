"""python -m components.monitoring --stack STACK [--out DIR]
python -m components.monitoring --stack STACK --status-page FILE [--prometheus URL] [--minutes N]

Writes the stack's monitoring files into DIR (default: .state/monitoring under the project,
beside the scrape targets of components/operator/metrics.py): <stack>.rules.yml, the Prometheus
rules (rules.py), and <stack>.dashboard.json, the Grafana dashboard (dashboard.py), for a Prometheus
of your own (with `monitoring:`, `pulumi up` puts the rules on the stack's own: deploy.py).

With --status-page, writes that one file instead: the stack's status page (status_page.py), read
from the Prometheus at URL. It exits 1 when Prometheus did not answer (the page, written all the
same, says so).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.config import ConfigError, load_stack_file
from components.monitoring.dashboard import dashboard_text
from components.monitoring.rules import rules_text
from components.monitoring.status_data import DEFAULT_MINUTES
from components.monitoring.status_page import write_status_page

OUT_SUBDIR = Path(".state") / "monitoring"
PROMETHEUS = "http://127.0.0.1:9090"     # Prometheus's own default listen address


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m components.monitoring", description=__doc__.split("\n\n")[0])
    p.add_argument("--stack", required=True, help="stack name (stacks/Pulumi.<stack>.yaml)")
    p.add_argument("--out", type=Path, help=f"the directory to write the files in (default: {OUT_SUBDIR})")
    p.add_argument("--work-dir", type=Path, default=Path.cwd(), help="the project directory (default: here)")
    p.add_argument("--status-page", type=Path, metavar="FILE", help="write the stack's status page (HTML) there, only")
    p.add_argument("--prometheus", default=PROMETHEUS, metavar="URL",
                   help=f"the Prometheus the status page reads (default: {PROMETHEUS})")
    p.add_argument("--minutes", type=float, default=DEFAULT_MINUTES,
                   help=f"the status page's window: its tok/s plot, its recent restarts (default: {DEFAULT_MINUTES})")
    args = p.parse_args(argv)
    try:
        spec = load_stack_file(args.work_dir / "stacks" / f"Pulumi.{args.stack}.yaml")
    except ConfigError as err:
        print(str(err), file=sys.stderr)
        return 2
    if args.status_page:
        status = write_status_page(args.status_page, args.prometheus, args.stack, spec, args.minutes)
        print(args.status_page)
        if status.error:
            print(f"Prometheus did not answer: {status.error}", file=sys.stderr)
        return 1 if status.error else 0
    out = args.out or args.work_dir / OUT_SUBDIR
    out.mkdir(parents=True, exist_ok=True)
    for name, text in ((f"{args.stack}.rules.yml", rules_text(args.stack, spec)),
                       (f"{args.stack}.dashboard.json", dashboard_text(args.stack, spec))):
        (out / name).write_text(text)
        print(out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
