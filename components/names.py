"""Every name this project generates on a node — units, containers, timers, files, directories —
and the ports that are wire facts (what Ray binds by itself besides the ports a stack sets).

The components create things under these names, config/crosscheck.py checks the same names for
clashes and config/reference.py writes them into the stack reference: one definition, so the
check cannot drift from what is created. Templates read them as the Jinja global `names`.
tests/unit/test_names.py fails on a `bws-` literal anywhere else in components/ or templates/.
"""

from __future__ import annotations

# Every unit and container of ours starts with it; retire/keep may never list one.
PREFIX = "bws-"

# Where our files live on a node (state_dir's default, the root-only env files, the logs).
STATE_DIR = "/var/lib/blackwell-serving"
ETC_DIR = "/etc/blackwell-serving"
UNIT_RECORDS_DIR = f"{STATE_DIR}/units"        # each unit's recorded inputs (install-unit.sh.j2)


PUT_BACK_SUFFIX = ".put-back"

# Our derived images' repositories (components/resources/image.py: REPOSITORY/NAME:CONTENT-DIGEST).
# A tag under it is ours to remove once no container uses it; any other image is the operator's.
DERIVED_IMAGE_REPOSITORY = "blackwell-serving"


def derived_image(tag: str | None) -> bool:
    return bool(tag) and tag.startswith(f"{DERIVED_IMAGE_REPOSITORY}/")


def unit_put_back_mark(unit: str) -> str:
    """Left by a rollback that put a unit's previous text back while the state records the new
    one (components/steps/rollback.py); the next install of the unit removes it."""
    return f"{UNIT_RECORDS_DIR}/{unit}{PUT_BACK_SUFFIX}"
# The watchdog's and rank watch's state (failures in a row, the start that answered): runtime
# only, gone with a reboot.
WATCHDOG_RUN_DIR = "/run/blackwell-serving/watchdog"
# The counter a deployment's watchdog writes for node_exporter's textfile collector on its head
# (templates/scripts/watchdog.sh.j2; components/monitoring/alerts.py reads it): the restarts it
# made, labelled deployment="NAME", and 0 from the moment it is armed, since increase() never
# counts the first value a series shows. TEXTFILE_DIR is the collector's directory.
WATCHDOG_RESTARTS_METRIC = "bws_watchdog_restarts_total"
TEXTFILE_DIR = f"{STATE_DIR}/textfile"


def watchdog_textfile(deployment: str) -> str:
    return f"{TEXTFILE_DIR}/{PREFIX}watchdog-{deployment}.prom"

# A venv engine's directory (components/resources/venv.py): marked built last, so a half-built one has no mark.
VENV_BUILT_MARK = f".{PREFIX}built"
VENV_KEPT_LIST = f".{PREFIX}kept.txt"
VENV_RECIPE = f".{PREFIX}recipe.json"

# What `ray start --head` binds besides its GCS port: the Ray client server, and the dashboard.
RAY_CLIENT_PORT = 10001
RAY_DASHBOARD_PORT = 8265
# What `ray start` binds on every node of a cluster, head and workers: the Ray agent's HTTP port
# (ray's DEFAULT_DASHBOARD_AGENT_LISTEN_PORT, bound with or without the dashboard).
RAY_AGENT_PORT = 52365

GATEWAY_UNIT = f"{PREFIX}gateway.service"
GATEWAY_CONTAINER = f"{PREFIX}gateway"
GATEWAY_CONFIG_DIR = f"{ETC_DIR}/gateway"
GATEWAY_ENV_FILE = f"{ETC_DIR}/gateway.env"

# Monitoring (components/resources/monitoring.py): Prometheus on the stack's monitoring node, a
# node_exporter on every node, each run from its Debian package's binary under a unit of ours (the
# packages' own units stay off). The Debian packages we installed are recorded, so that destroy
# removes those and no other.
PROMETHEUS_UNIT = f"{PREFIX}prometheus.service"
NODE_EXPORTER_UNIT = f"{PREFIX}node-exporter.service"
# Beside ETC_DIR, not in it: ETC_DIR is root-only (its env files hold keys), and Prometheus runs as
# the package's `prometheus` user, which must read its configuration (found by the lab test).
PROMETHEUS_CONFIG_DIR = f"{ETC_DIR}-prometheus"
PROMETHEUS_DATA_DIR = f"{STATE_DIR}/prometheus"
PACKAGE_RECORDS_DIR = f"{STATE_DIR}/packages"


def package_record(package: str) -> str:
    """Present while a Debian package on the node is there because a step of ours installed it."""
    return f"{PACKAGE_RECORDS_DIR}/{package}.installed"


# The layer registry on a build node (components/resources/layer_registry.py).
LAYER_REGISTRY_CONTAINER = f"{PREFIX}layer-registry"

# Operator side: temporary directories, and the name a step's script runs under ($0).
STEP_ARGV0 = f"{PREFIX}step"


def temp_prefix(purpose: str) -> str:
    return f"{PREFIX}{purpose}-"


def engine_unit(deployment: str) -> str:
    return f"{PREFIX}{deployment}.service"


def engine_container(deployment: str) -> str:
    return f"{PREFIX}{deployment}"


def engine_env_file(deployment: str) -> str:
    """The root-only EnvironmentFile with the engine's API key."""
    return f"{ETC_DIR}/{deployment}.env"


def ray_cluster(deployment: str) -> str:
    return f"{deployment}-ray"


def ray_unit(cluster: str, role: str) -> str:
    return f"{PREFIX}{cluster}-{role}.service"


def ray_container(cluster: str, role: str) -> str:
    return f"{PREFIX}{cluster}-{role}"


def bandwidth_container(deployment: str, rank: int) -> str:
    return f"{PREFIX}{deployment}-bw-{rank}"


def model_cache_dirs(cache_dir: str, repo: str, revision: str) -> tuple[str, str]:
    """(final, staging) directories of a model's cache on a node (components/resources/model.py);
    config/crosscheck.py gives each final directory one owner."""
    leaf = f"{repo.replace('/', '--')}--{revision}"
    return f"{cache_dir}/{leaf}", f"{cache_dir}/.staging/{leaf}"


def download_container(model: str) -> str:
    """The container a model's download runs in (templates/scripts/fetch-model.sh.j2)."""
    return f"{PREFIX}download-{model}"


def watchdog_units(deployment: str) -> tuple[str, str]:
    """(service, timer) of a deployment's watchdog."""
    return f"{PREFIX}{deployment}-watchdog.service", f"{PREFIX}{deployment}-watchdog.timer"


def rank_watch_name(deployment: str, rank: int) -> str:
    return f"{deployment}-rank{rank}"


def rank_watch_units(deployment: str, rank: int) -> tuple[str, str]:
    """(service, timer) of one rank's watch (a native multi-node launch)."""
    name = rank_watch_name(deployment, rank)
    return f"{PREFIX}{name}-watch.service", f"{PREFIX}{name}-watch.timer"
