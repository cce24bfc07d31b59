#!/bin/sh
# Read-only discovery of one machine for `python -m components.discover`: it changes nothing.
# Plain POSIX sh (a node's /bin/sh may be dash), no value templated in. One tab-separated line
# per fact, parsed by components/discover/facts.py; tabs and newlines inside a value are
# replaced by spaces. Every call that can hang (nvidia-smi, docker) is bounded by `timeout`.
# Argv: the prefix of our own units and containers (components/names.py), left out of the lists.
export LC_ALL=C
ours=${1:?the prefix of our own units and containers}

# A file's first line without tabs or carriage returns (empty when it cannot be read).
first() {
  head -n 1 "$1" 2>/dev/null | tr -d '\t\r'
}

# A process's command line, its NUL-separated words joined by spaces.
cmdline() {
  { tr '\000\t\n' '   ' < "/proc/$1/cmdline"; } 2>/dev/null
}

printf 'arch\t%s\n' "$(uname -m)"
printf 'hostname\t%s\n' "$(uname -n)"
printf 'memory_kb\t%s\n' "$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"

if command -v nvidia-smi >/dev/null 2>&1; then
  if gpus=$(timeout 30 nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>&1); then
    printf '%s\n' "$gpus" | while IFS= read -r line; do
      if [ -n "$line" ]; then printf 'gpu\t%s\n' "$(printf '%s' "$line" | tr -d '\t')"; fi
    done
  else
    printf 'gpu_error\t%s\n' "$(printf '%s' "$gpus" | head -n 1 | tr -d '\t')"
  fi
fi

printf 'default_route\t%s\n' "$(ip -4 route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')"

# netdev NAME OPERSTATE MTU SPEED_MBPS HARDWARE(1: a device behind it) BRIDGE(1) ADDRESSES(a.b.c.d/len,...)
for sys in /sys/class/net/*; do
  [ -e "$sys" ] || continue
  dev=${sys##*/}
  hardware=0; bridge=0
  if [ -e "$sys/device" ]; then hardware=1; fi
  if [ -d "$sys/bridge" ]; then bridge=1; fi
  addresses=$(ip -o -4 addr show dev "$dev" scope global 2>/dev/null | awk '{printf "%s%s", sep, $4; sep = ","}')
  printf 'netdev\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$dev" "$(first "$sys/operstate")" "$(first "$sys/mtu")" \
    "$(first "$sys/speed")" "$hardware" "$bridge" "$addresses"
done

# rdma HCA PCI_ADDRESS NETDEVS; rdma_port HCA PORT STATE LINK_LAYER; gid HCA PORT INDEX TYPE GID
for ib in /sys/class/infiniband/*; do
  [ -d "$ib" ] || continue
  hca=${ib##*/}
  pci=$(readlink -f "$ib/device" 2>/dev/null)
  nets=""
  for net in "$ib"/device/net/*; do
    if [ -e "$net" ]; then nets="$nets,${net##*/}"; fi
  done
  printf 'rdma\t%s\t%s\t%s\n' "$hca" "${pci##*/}" "${nets#,}"
  for port in "$ib"/ports/*; do
    [ -d "$port" ] || continue
    printf 'rdma_port\t%s\t%s\t%s\t%s\n' "$hca" "${port##*/}" "$(first "$port/state")" "$(first "$port/link_layer")"
    for type_file in "$port"/gid_attrs/types/*; do
      type=$(first "$type_file")
      [ -n "$type" ] || continue
      index=${type_file##*/}
      gid=$(first "$port/gids/$index")
      case $gid in
        '' | 0000:0000:0000:0000:0000:0000:0000:0000) continue ;;
      esac
      printf 'gid\t%s\t%s\t%s\t%s\t%s\n' "$hca" "${port##*/}" "$index" "$type" "$gid"
    done
  done
done

# service UNIT DESCRIPTION COMMAND_LINES: every running service but ours (named with the prefix
# components/names.py gives them, the script's first argument), with the
# command lines of the processes in its cgroup (a unit that runs `docker run` shows its arguments).
systemctl list-units --type=service --state=running --no-legend --plain 2>/dev/null | awk '{print $1}' |
  while IFS= read -r unit; do
    case $unit in
      "$ours"*) continue ;;
    esac
    group=$(systemctl show -p ControlGroup --value "$unit" 2>/dev/null)
    procs=""
    for file in "/sys/fs/cgroup$group/cgroup.procs" "/sys/fs/cgroup/systemd$group/cgroup.procs"; do
      if [ -n "$group" ] && [ -r "$file" ]; then procs=$(cat "$file"); break; fi
    done
    commands=""
    for pid in $procs; do
      commands="$commands $(cmdline "$pid")"
    done
    description=$(systemctl show -p Description --value "$unit" 2>/dev/null | tr -d '\t')
    printf 'service\t%s\t%s\t%s\n' "$unit" "$description" "$(printf '%s' "$commands" | cut -c 2-4001)"
  done

# docker VERSION|absent|unreachable RUNTIMES(a,b); container NAME IMAGE COMMAND
if command -v docker >/dev/null 2>&1; then
  # shellcheck disable=SC2016 # a Go template, not shell
  if info=$(timeout 30 docker info --format '{{.ServerVersion}}	{{range $name, $v := .Runtimes}}{{$name}},{{end}}' 2>/dev/null); then
    printf 'docker\t%s\n' "${info%,}"
    timeout 30 docker ps --no-trunc --format '{{.Names}}	{{.Image}}	{{.Command}}' 2>/dev/null |
      while IFS= read -r line; do
        case $line in
          "$ours"*) continue ;;
        esac
        printf 'container\t%s\n' "$line"
      done
  else
    printf 'docker\tunreachable\t\n'
  fi
else
  printf 'docker\tabsent\t\n'
fi
