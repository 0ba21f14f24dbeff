#!/usr/bin/env bash
# Installs NVIDIA dcgm-exporter for gpu-sentinel on hosts whose GPUs have no NVML GPM (A100:
# p4d, p4de), so the agent gets DCGM's profiling counters (SM active, SM occupancy, tensor
# active, DRAM active, FP64/32/16 active, PCIe TX/RX) instead of profiling_source "none":
#   /etc/gpu-sentinel/dcgm-counters.csv          the counters file (dcgm-exporter `-f`)
#   /etc/systemd/system/dcgm-exporter.service    runs the pinned exporter image on 127.0.0.1:9400,
#                                                ordered Before= the agent, enabled
# The image is pulled now (image bake), so the first boot needs no registry. Needs Docker and the
# NVIDIA Container Toolkit (the AWS Deep Learning AMIs have both). Idempotent.
#
# Usage: install-dcgm-exporter.sh --image IMAGE [--root DIR] [--no-pull] [--start] [--dry-run]
#   --image IMAGE   dcgm-exporter image, pinned by tag or digest (never :latest)
#   --root DIR      install under DIR as if it were / (images, tests); docker and systemctl are skipped
#   --no-pull       do not pull the image (it is already there)
#   --start         (re)start the exporter now (default: enable only, for image baking)
#   --dry-run       print what would be done, change nothing
set -euo pipefail

readonly UNIT_NAME=dcgm-exporter.service
readonly COUNTERS=/etc/gpu-sentinel/dcgm-counters.csv
# First line of the unit this script writes: a unit without it belongs to someone else.
readonly MARKER='# gpu-sentinel: NVIDIA dcgm-exporter'

ROOT=/
IMAGE=
PULL=1
START=0
DRY_RUN=0
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

say() { printf 'gpu-sentinel dcgm-exporter install: %s\n' "$*"; }
die() { printf 'gpu-sentinel dcgm-exporter install: error: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --image) IMAGE=${2:?--image needs an image reference}; shift 2 ;;
    --root) ROOT=${2:?--root needs a folder}; shift 2 ;;
    --no-pull) PULL=0; shift ;;
    --start) START=1; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "Expected one of --image, --root, --no-pull, --start, --dry-run, got \`$1\`" ;;
  esac
done

[[ -n $IMAGE ]] || die 'Expected `--image` (e.g. nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04), got none'
if [[ ! $IMAGE =~ ^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+|@sha256:[0-9a-f]{64})$ || $IMAGE == *:latest ]]; then
  die "Expected \`--image\` pinned by tag or digest (registry/repository:tag, not :latest), got \`$IMAGE\`"
fi
for f in dcgm-counters.csv dcgm-exporter.service; do
  [[ -f $SRC/$f ]] || die "Expected $f next to this script (an unpacked agent bundle), got none in $SRC"
done
ROOT=${ROOT%/}
LIVE=0
[[ -z $ROOT ]] && LIVE=1

[[ -f $SRC/install-common.sh ]] || die "Expected install-common.sh next to this script in $SRC, got none"
# shellcheck source=install-common.sh
source "$SRC/install-common.sh"

unit="$ROOT/etc/systemd/system/$UNIT_NAME"
if [[ -f $unit ]] && [[ $(head -n 1 "$unit") != "$MARKER"* ]]; then
  die "$unit exists and was not written by gpu-sentinel; leaving it (point the agent's dcgmExporterUrl at it instead)"
fi
run mkdir -p "$ROOT/etc/gpu-sentinel" "$ROOT/etc/systemd/system"
write_file "$ROOT$COUNTERS" 0644 <"$SRC/dcgm-counters.csv"
sed -e "s|@IMAGE@|$IMAGE|g" -e "s|@COUNTERS@|$COUNTERS|g" "$SRC/dcgm-exporter.service" | write_file "$unit" 0644

if [[ $LIVE -eq 0 ]]; then
  say "skipped docker and systemctl: --root $ROOT is not the live system"
elif [[ $(id -u) -ne 0 && $DRY_RUN -eq 0 ]]; then
  say "skipped docker and systemctl: not root (run with sudo)"
else
  command -v docker >/dev/null || die 'Expected docker on the image (dcgm-exporter runs as a container), got none'
  command -v nvidia-ctk >/dev/null || say 'nvidia-ctk not found: check that Docker has the NVIDIA runtime (--gpus all)'
  if [[ $PULL -eq 1 ]]; then run docker pull "$IMAGE"; fi
  if command -v systemctl >/dev/null; then
    if [[ -d /run/systemd/system ]]; then run systemctl daemon-reload; fi
    run systemctl enable "$UNIT_NAME"
    if [[ $START -eq 1 ]]; then run systemctl restart "$UNIT_NAME"; fi
  else
    say "skipped systemctl: not found; enable $UNIT_NAME yourself"
  fi
fi
say "installed $UNIT_NAME ($IMAGE) and $COUNTERS under ${ROOT:-/}"
