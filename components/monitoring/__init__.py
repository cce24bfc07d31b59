"""Monitoring, generated from the stack spec: the recorded series every engine maps to (series),
the alerts over them (alerts), the Prometheus rule file (rules), a Grafana dashboard of the
recorded series (dashboard), the status page read from a running Prometheus (status_page, over
promapi, status_data, status_html and humane), and the CLI that writes them (__main__); on the
nodes, with `monitoring:`, Prometheus and the exporters (deploy, its configuration: scrape)."""
