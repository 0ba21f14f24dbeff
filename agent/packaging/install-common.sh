# Helpers shared by install.sh and install-dcgm-exporter.sh (sourced, not run). Both honour
# DRY_RUN=1 (print what would be done, change nothing).

# Runs a command, or prints it under --dry-run.
run() {
  if [[ $DRY_RUN -eq 1 ]]; then
    printf '+ %s\n' "$*"
  else
    "$@"
  fi
}

# Writes stdin to a file (mode $2) through a temporary file and a rename, or prints it under --dry-run.
write_file() {
  local dest=$1 mode=$2
  if [[ $DRY_RUN -eq 1 ]]; then
    printf '+ write %s (mode %s)\n' "$dest" "$mode"
    cat >/dev/null
    return
  fi
  local tmp="$dest.tmp.$$"
  cat >"$tmp"
  chmod "$mode" "$tmp"
  mv -f "$tmp" "$dest"
}
