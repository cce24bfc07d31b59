"""The backend URL and how to reach it without a secret in sight.

A team's URL names host, port, user and database, never a password: libpq's PGPASSFILE (read by
Pulumi's lib/pq and by psycopg alike) holds it, root-only. A URL that does carry one is still
accepted (Pulumi does), but every message shows it redacted."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Mapping
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

DEFAULT_TABLE = "pulumi_state"   # Pulumi's own default for ?table=


class BackendError(Exception):
    """A backend setting that cannot be used; the message says the fix."""


def backend_url(env: Mapping[str, str] = os.environ) -> str:
    return env.get("PULUMI_BACKEND_URL", "")


def is_postgres(url: str) -> bool:
    return urlsplit(url).scheme in ("postgres", "postgresql")


def redact(url: str) -> str:
    """The URL as a message may show it: no password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:****@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def table(url: str) -> str:
    name = dict(parse_qsl(urlsplit(url).query)).get("table") or DEFAULT_TABLE
    if not name.replace("_", "").isalnum():
        raise BackendError(f"table name {name!r} in the backend URL is not a plain identifier; fix: letters, "
                           f"digits and _ only")
    return name


def conninfo(url: str) -> str:
    """The libpq URL of a Pulumi postgres:// backend URL: Pulumi's own `table` parameter taken out."""
    parts = urlsplit(url)
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "table"])
    return urlunsplit(parts._replace(scheme="postgresql", query=query))


def check_passfile(env: Mapping[str, str] = os.environ) -> None:
    """PGPASSFILE, when set, must exist and be private (libpq itself ignores a group- or
    world-readable one without saying why the login then fails)."""
    path = env.get("PGPASSFILE")
    if not path:
        return
    try:
        mode = Path(path).stat().st_mode
    except OSError:
        raise BackendError(f"PGPASSFILE names {path}, which does not exist; fix: create it (host:port:db:user:"
                           f"password, one line) with mode 0600") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise BackendError(f"PGPASSFILE {path} is readable by others (mode {stat.S_IMODE(mode):o}); "
                           f"fix: chmod 600 {path}")
