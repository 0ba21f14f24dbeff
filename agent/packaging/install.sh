#!/usr/bin/env bash
# Installs the gpu-sentinel host agent from an unpacked bundle (this script's folder), of either kind:
#   - the single executable `gpu-sentinel-agent` (Node.js 24 inside; no Node.js needed on the host),
#     one bundle per architecture: its VERSION says which (linux-x64, linux-arm64);
#   - the ESM bundle `gpu-sentinel-agent.mjs` + chunks/, run by the host's Node.js >= 20.
# It lays down:
#   /opt/gpu-sentinel/lib/        the executable or the .mjs + chunks/ + source maps, and node_modules/ (koffi)
#   /opt/gpu-sentinel/bin/gpu-sentinel-agent   launcher; linked from /usr/local/bin
#   /etc/gpu-sentinel/agent.json  config, from agent.sample.json; an existing one is kept
#   /var/lib/gpu-sentinel/        spool (the unit's StateDirectory)
#   /etc/systemd/system/gpu-sentinel-agent.service   hardened unit, enabled (multi-user.target.wants link)
#   /usr/lib/sysusers.d/gpu-sentinel-agent.conf      the system user `gpu-sentinel`, in the group owning
#                                                    /dev/nvidiactl (else `video`), made at boot by systemd-sysusers
# and, on the live system, that user right away.
# Idempotent: running it again upgrades the files and keeps the config; a new --endpoint replaces
# the config's endpoint (and says so), every other key is kept.
#
# Usage: install.sh [--root DIR] [--arch x64|arm64] [--prefix DIR] [--node PATH] [--endpoint URL] [--start] [--dry-run]
#   --root DIR      install under DIR as if it were / (images, tests); users and systemctl are skipped
#   --arch ARCH     the target's architecture, which the bundle must be built for (default: this host's, uname -m)
#   --prefix DIR    installation folder (default /opt/gpu-sentinel)
#   --node PATH     ESM bundle only: Node.js >= 20 to run it with (default: `command -v node`)
#   --endpoint URL  API stage URL written into agent.json (new or existing; its other keys are kept)
#   --start         (re)start the service now (default: enable only, for AMI baking)
#   --dry-run       print what would be done, change nothing
set -euo pipefail

readonly UNIT_NAME=gpu-sentinel-agent.service
readonly SERVICE_USER=gpu-sentinel
# The target of the unit's [Install] WantedBy=, whose .wants folder enables it.
readonly WANTED_BY=multi-user.target
readonly SYSUSERS_FILE=/usr/lib/sysusers.d/gpu-sentinel-agent.conf
readonly MIN_NODE_MAJOR=20
# V8 flags for the ESM bundle's Node.js, the ones the single executable has built in
# (AGENT_SEA_EXEC_ARGV, agent/packaging/build-agent-sea.ts; a test holds the two equal).
readonly NODE_FLAGS='--max-old-space-size=64 --max-semi-space-size=1 --single-threaded --expose-gc --no-turbofan'

ROOT=/
PREFIX=/opt/gpu-sentinel
NODE=
ARCH=
ENDPOINT=
START=0
DRY_RUN=0
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

say() { printf 'gpu-sentinel install: %s\n' "$*"; }
die() { printf 'gpu-sentinel install: error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --root) ROOT=${2:?--root needs a folder}; shift 2 ;;
    --prefix) PREFIX=${2:?--prefix needs a folder}; shift 2 ;;
    --arch) ARCH=${2:?--arch needs x64 or arm64}; shift 2 ;;
    --node) NODE=${2:?--node needs a path}; shift 2 ;;
    --endpoint) ENDPOINT=${2:?--endpoint needs a URL}; shift 2 ;;
    --start) START=1; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "Expected one of --root, --arch, --prefix, --node, --endpoint, --start, --dry-run, got \`$1\`" ;;
  esac
done

[[ $PREFIX == /* ]] || die "Expected \`--prefix\` to be an absolute path, got \`$PREFIX\`"
if [[ -n $ENDPOINT && ! $ENDPOINT =~ ^https?://[^[:space:]]+$ ]]; then
  die "Expected \`--endpoint\` to be an http(s) URL, got \`$ENDPOINT\`"
fi
ROOT=${ROOT%/}
LIVE=0 # 1 when installing onto this very system (root /), the only case that touches users and systemd
[[ -z $ROOT ]] && LIVE=1

[[ -f $SRC/install-common.sh ]] || die "Expected install-common.sh next to this script in $SRC, got none"
# shellcheck source=install-common.sh
source "$SRC/install-common.sh"

# The bundle's kind: the single executable, or the ESM bundle for a host's Node.js.
if [[ -f $SRC/gpu-sentinel-agent && -x $SRC/gpu-sentinel-agent ]]; then
  KIND=executable
elif [[ -f $SRC/gpu-sentinel-agent.mjs ]]; then
  KIND=node
else
  die "Expected the bundle file $SRC/gpu-sentinel-agent (or gpu-sentinel-agent.mjs), got neither; run this script from an unpacked bundle (agent/packaging/build.ts)"
fi
for f in node_modules/koffi/package.json gpu-sentinel-agent.service agent.sample.json; do
  [[ -e $SRC/$f ]] || die "Expected the bundle file $SRC/$f, got nothing; run this script from an unpacked bundle (agent/packaging/build.ts)"
done

# Architecture: the bundle's (its VERSION, `<version> linux-<arch>`) must be the target's.
case $(uname -m) in
  x86_64 | amd64) HOST_ARCH=x64 ;;
  aarch64 | arm64) HOST_ARCH=arm64 ;;
  *) HOST_ARCH=$(uname -m) ;;
esac
[[ -n $ARCH ]] || ARCH=$HOST_ARCH
[[ $ARCH == x64 || $ARCH == arm64 ]] || die "Expected \`--arch\` to be x64 or arm64, got \`$ARCH\`"
BUNDLE_ARCH=$(sed -n 's/^.* linux-\([a-z0-9]*\)$/\1/p' "$SRC/VERSION" 2>/dev/null || true)
if [[ -n $BUNDLE_ARCH && $BUNDLE_ARCH != "$ARCH" ]]; then
  die "Expected a bundle built for linux-$ARCH (the target's architecture), got linux-$BUNDLE_ARCH; use gpu-sentinel-agent-<version>-linux-$ARCH.tar.gz (or --arch for an image of another architecture)"
fi

if [[ $KIND == executable ]]; then
  [[ -z $NODE ]] || say "--node ignored: this bundle is the single executable, with its own Node.js"
  EXEC="$PREFIX/lib/gpu-sentinel-agent"
else
  # Node.js: the ESM bundle runs on the host's Node >= 20.
  if [[ -z $NODE ]]; then
    NODE=$(command -v node || true)
    [[ -n $NODE ]] || die "Expected Node.js >= $MIN_NODE_MAJOR on PATH, got nothing; install it, pass --node PATH, or use the single-executable bundle"
  fi
  if [[ -x $NODE ]]; then
    major=$("$NODE" -p 'process.versions.node.split(".")[0]')
    [[ $major -ge $MIN_NODE_MAJOR ]] || die "Expected Node.js >= $MIN_NODE_MAJOR at $NODE, got $("$NODE" --version)"
  elif [[ $LIVE -eq 1 ]]; then
    die "Expected an executable Node.js at \`$NODE\`, got nothing"
  else
    say "node $NODE is not executable here; written into the unit as given (--root install)"
  fi
  flags=$NODE_FLAGS
  # --no-turbofan leaves the hot code to Maglev, which Node.js runs by default from 22 on; an older
  # Node.js would be left with no optimizing compiler, so it keeps TurboFan.
  if [[ -n ${major:-} && $major -lt 22 ]]; then flags=${NODE_FLAGS/ --no-turbofan/}; fi
  EXEC="$NODE $flags $PREFIX/lib/gpu-sentinel-agent.mjs"
fi

# 1. Files: replace lib/ as a whole, so an upgrade leaves no stale module behind.
lib="$ROOT$PREFIX/lib"
run mkdir -p "$ROOT$PREFIX/bin" "$ROOT/usr/local/bin" "$ROOT/etc/gpu-sentinel" "$ROOT/etc/systemd/system" "$ROOT/var/lib/gpu-sentinel"
run rm -rf "$lib.new"
run mkdir -p "$lib.new"
if [[ $KIND == executable ]]; then
  run cp -R "$SRC/gpu-sentinel-agent" "$SRC/node_modules" "$lib.new/"
else
  run cp -R "$SRC/gpu-sentinel-agent.mjs" "$SRC/node_modules" "$lib.new/"
  # The entry's ESM chunks (imported from it), its source map and licence notices, when built with them.
  for extra in "$SRC/chunks" "$SRC"/gpu-sentinel-agent.mjs.*; do
    if [[ -e $extra ]]; then run cp -R "$extra" "$lib.new/"; fi
  done
fi
if [[ -e $SRC/VERSION ]]; then run cp "$SRC/VERSION" "$lib.new/"; fi
run rm -rf "$lib"
run mv "$lib.new" "$lib"
if [[ $KIND == executable ]]; then launch="$EXEC"; else launch="$NODE $PREFIX/lib/gpu-sentinel-agent.mjs"; fi
printf '#!/bin/sh\nexec %s "$@"\n' "$launch" | write_file "$ROOT$PREFIX/bin/gpu-sentinel-agent" 0755
run ln -sfn "$PREFIX/bin/gpu-sentinel-agent" "$ROOT/usr/local/bin/gpu-sentinel-agent"
run cp "$SRC/agent.sample.json" "$ROOT/etc/gpu-sentinel/agent.sample.json"

# 2. Config: created once; afterwards only a new --endpoint changes it (that key alone).
config="$ROOT/etc/gpu-sentinel/agent.json"
# The JSON tool: the single executable when it runs here (its hidden set-endpoint/get-endpoint
# commands), else a Node.js. Not sed: any character of the URL (&, |, quotes, backslashes) stays the URL.
json_node=$NODE
[[ -n $json_node && -x $json_node ]] || json_node=$(command -v node || true)
# json_config set-endpoint FILE URL: FILE's JSON object with "endpoint" set to URL, every other key kept.
# json_config get-endpoint FILE: FILE's "endpoint" string, or nothing.
json_config() {
  if [[ $KIND == executable && $ARCH == "$HOST_ARCH" ]]; then
    "$SRC/gpu-sentinel-agent" "$@"
    return
  fi
  [[ -n $json_node ]] || die "Expected a Node.js here to write --endpoint into $config (the bundle's executable is for linux-$ARCH), got nothing; pass --node PATH"
  "$json_node" -e '
    const [command, file, endpoint] = process.argv.slice(1);
    let config;
    try { config = JSON.parse(require("node:fs").readFileSync(file, "utf8")); }
    catch (err) { process.stderr.write(`Expected ${file} to hold a JSON object, got: ${err.message}\n`); process.exit(1); }
    if (command === "get-endpoint") { if (typeof config.endpoint === "string") process.stdout.write(config.endpoint); }
    else process.stdout.write(`${JSON.stringify({ ...config, endpoint }, null, 2)}\n`);
  ' "$@"
}
# Writes $1 (a JSON config file) with "endpoint" set to $2 into $3.
set_endpoint() {
  json_config set-endpoint "$1" "$2" >"$3" || die "Expected to write \`--endpoint\` into $config, got the error above; the config is unchanged"
}
# The "endpoint" of a JSON config file, or nothing.
get_endpoint() {
  json_config get-endpoint "$1" 2>/dev/null || true
}
if [[ -e $config && -z $ENDPOINT ]]; then
  say "kept the existing $config"
elif [[ -e $config ]]; then
  old=$(get_endpoint "$config")
  if [[ $old == "$ENDPOINT" ]]; then
    say "kept the existing $config (endpoint already $ENDPOINT)"
  else
    tmp_config=$(mktemp)
    set_endpoint "$config" "$ENDPOINT" "$tmp_config"
    write_file "$config" 0644 <"$tmp_config"
    rm -f "$tmp_config"
    say "endpoint in $config: ${old:-(none)} -> $ENDPOINT (every other key kept)"
  fi
elif [[ -n $ENDPOINT ]]; then
  tmp_config=$(mktemp)
  set_endpoint "$SRC/agent.sample.json" "$ENDPOINT" "$tmp_config"
  write_file "$config" 0644 <"$tmp_config"
  rm -f "$tmp_config"
else
  write_file "$config" 0644 <"$SRC/agent.sample.json"
  say "$config has the defaults: set \"endpoint\" (or GPU_SENTINEL_ENDPOINT) before starting"
fi

# 3. The hardened unit, enabled as `systemctl enable` does it (a link in the WantedBy= target's
# .wants folder): an image tree gets it with no systemctl, and boots with the agent started.
sed -e "s|@EXEC@|$EXEC|g" "$SRC/gpu-sentinel-agent.service" |
  write_file "$ROOT/etc/systemd/system/$UNIT_NAME" 0644
run mkdir -p "$ROOT/etc/systemd/system/$WANTED_BY.wants"
run ln -sfn "/etc/systemd/system/$UNIT_NAME" "$ROOT/etc/systemd/system/$WANTED_BY.wants/$UNIT_NAME"

# 4. The service user, declared for systemd-sysusers (run at every boot before the services): an
# image tree gets the user on its first boot. The NVIDIA device group: the group owning
# /dev/nvidiactl here (often root, mode 0666: then video), video in an image tree.
gpu_group=video
if [[ $LIVE -eq 1 && -e /dev/nvidiactl ]]; then
  owner=$(stat -c %G /dev/nvidiactl)
  [[ $owner == root ]] || gpu_group=$owner
fi
run mkdir -p "$ROOT$(dirname "$SYSUSERS_FILE")"
printf '%s\n' \
  "# gpu-sentinel agent's service user (install.sh); its home is the unit's StateDirectory." \
  "u $SERVICE_USER - \"gpu-sentinel agent\" /var/lib/gpu-sentinel /usr/sbin/nologin" \
  "m $SERVICE_USER $gpu_group" | write_file "$ROOT$SYSUSERS_FILE" 0644

# 5. User and systemd now: only on the live system, as root, with the tools present.
if [[ $LIVE -eq 0 ]]; then
  say "declared user $SERVICE_USER ($SYSUSERS_FILE) and enabled $UNIT_NAME in $ROOT: both take effect at its first boot; skipped useradd and systemctl (not the live system)"
elif [[ $(id -u) -ne 0 && $DRY_RUN -eq 0 ]]; then
  say "skipped user $SERVICE_USER and systemctl: not root (run with sudo)"
else
  if ! command -v useradd >/dev/null; then
    say "skipped user $SERVICE_USER: useradd not found"
  elif ! id -u "$SERVICE_USER" >/dev/null 2>&1; then
    run useradd --system --no-create-home --home-dir /var/lib/gpu-sentinel --shell /usr/sbin/nologin "$SERVICE_USER"
  fi
  if getent group "$gpu_group" >/dev/null && command -v usermod >/dev/null; then
    run usermod -a -G "$gpu_group" "$SERVICE_USER"
  fi
  if id -u "$SERVICE_USER" >/dev/null 2>&1 || [[ $DRY_RUN -eq 1 ]]; then
    run chown "$SERVICE_USER:$SERVICE_USER" "$ROOT/var/lib/gpu-sentinel"
    run chmod 0750 "$ROOT/var/lib/gpu-sentinel"
  fi
  if ! command -v systemctl >/dev/null; then
    say "skipped systemctl: not found; enable $UNIT_NAME yourself"
  elif [[ -d /run/systemd/system ]]; then
    run systemctl daemon-reload
    run systemctl enable "$UNIT_NAME"
    if [[ $START -eq 1 ]]; then run systemctl restart "$UNIT_NAME"; fi
  else
    # A chroot or container build: enabling only makes the symlink, it starts at the image's first boot.
    run systemctl enable "$UNIT_NAME"
    say "systemd is not running here: enabled $UNIT_NAME for the next boot, not started"
  fi
fi

version=$(cat "$SRC/VERSION" 2>/dev/null || echo unknown)
if [[ $DRY_RUN -eq 1 ]]; then
  say "dry run: nothing changed (would install $version under $ROOT$PREFIX)"
else
  say "installed $version under $ROOT$PREFIX"
fi
