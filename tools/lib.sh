# Shared by tools/demo, tools/test and tools/bench. Source it; do not run it.
# shellcheck shell=bash
# shellcheck disable=SC2034  # the package groups below are read through a nameref

LOCKSTEP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export AVAHI_COMPAT_NOWARN=1

# Debian packages Lockstep needs, by what needs them (ensure_packages takes group names and
# reads these through a nameref).
LOCKSTEP_PACKAGES_build=(libavahi-compat-libdnssd-dev)                    # the DNS-SD C API
LOCKSTEP_PACKAGES_players=(mpv ffmpeg python3-gst-1.0 gir1.2-gstreamer-1.0 gstreamer1.0-plugins-base gstreamer1.0-plugins-good)  # the real players (mpv, GStreamer) and test media
LOCKSTEP_PACKAGES_lab=(avahi-daemon avahi-utils dbus iproute2 util-linux procps nftables)  # discovery; ip, unshare, nsenter, ps; a firewall for lockstep doctor's tests
LOCKSTEP_PACKAGES_browser=(chromium curl)                                  # the web player's lab tests: headless Chromium over tools/cdp-pipe; curl for refused requests
LOCKSTEP_PACKAGES_reference=(chrony syncplay syncplay-server)            # the benchmarks' references
LOCKSTEP_PACKAGES_lint=(shellcheck)                                      # tools/test checks the scripts
LOCKSTEP_PACKAGES_python=(python3 python3-venv)                          # the Python SDK's tests (a fresh venv)
LOCKSTEP_PACKAGES_package=(dpkg-dev binutils lintian)                    # tools/package: shlibdeps, strip, lintian
LOCKSTEP_PACKAGES_prove=(systemd systemd-container adduser avahi-daemon libavahi-compat-libdnssd1 dbus)  # tools/packaging/prove: systemd-analyze, nspawn, the .deb's dependencies

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Installs whatever is missing of the package groups named (build, players, lab, browser, reference, lint, python;
# all of them by default). Services are kept from starting while packages install (a chronyd
# started by its package could set this machine's clock).
ensure_packages() {
  local groups=("$@") wanted=() missing=()
  [ ${#groups[@]} -eq 0 ] && groups=(build players lab browser reference lint python)
  for g in "${groups[@]}"; do
    local -n list="LOCKSTEP_PACKAGES_$g"
    wanted+=("${list[@]}")
  done
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "need root (or sudo) to install: ${missing[*]}"
    sudo="sudo"
  fi
  say "installing ${missing[*]}"
  local policy=/usr/sbin/policy-rc.d made_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod +x "$policy" && made_policy=1
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  [ -n "$made_policy" ] && $sudo rm -f "$policy"
  return 0
}

# Runs a test command (CMD...) for at most LIMIT seconds, its output line by line (a hung test
# process would otherwise take its last buffered lines with it). On a hang it stops the command
# and its children, names the tests that started and never ended, and fails: a hang is a
# failure with a name, not a CI run that times out. A Swift Testing process that has printed
# that its run passed gets 60 s to exit; if it does not, it is stopped with a notice, and its
# verdict stands.
run_bounded() { # LIMIT LABEL CMD...
  local limit=$1 label=$2 log rc pid passed_at="" stopped_after_pass=0
  shift 2
  log=$(mktemp /tmp/lockstep-test-output.XXXXXX)
  timeout -k 20 "$limit" stdbuf -oL -eL "$@" > >(tee "$log") 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if [ -z "$passed_at" ] && grep -aqE 'Test run with .* passed after' "$log"; then passed_at=$SECONDS; fi
    if [ -n "$passed_at" ] && ((SECONDS - passed_at > 60)); then
      say "NOTICE: $label: the test process said its run passed, then did not exit within 60 s; stopped it"
      stopped_after_pass=1
      kill -TERM "$pid" 2>/dev/null || true
      break
    fi
    sleep 1
  done
  set +e
  wait "$pid"
  rc=$?
  set -e
  sleep 0.2 # tee's last lines
  if [ "$stopped_after_pass" = 1 ]; then
    rc=0
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    say "$label: still running after ${limit}s, stopped; tests that started and never ended:"
    python3 "$LOCKSTEP_ROOT/tools/unfinished-tests" "$log" >&2 || true
    rm -f "$log"
    die "$label hung (limit ${limit}s)"
  fi
  rm -f "$log"
  return "$rc"
}

ensure_swift() {
  command -v swift >/dev/null || die "Swift 6 is needed (https://www.swift.org/install/linux/); 'swift' is not on PATH"
}

# How release binaries are linked, the ones tools/package ships and the ones tools/bench measures:
# - the Swift runtime and standard library linked in (--static-swift-stdlib): a device needs no
#   toolchain;
# - by lld, without --export-dynamic (which swiftc adds for executables): that put the
#   executable's 32,000 symbols in its dynamic symbol table, about 2 MiB of every agent's
#   resident pages for lookups nothing needs (docs/scale.md, "Memory");
# - full RELRO (-z relro -z now), as Debian's hardening asks.
# Not -z pack-relative-relocs: 3 MiB less again, but it needs glibc 2.36 (not Ubuntu 22.04).
release_link_flags=(--static-swift-stdlib -Xswiftc -use-ld=lld -Xlinker --no-export-dynamic
  -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now)

# Shows a swift build log's warnings and errors on stderr, but not the static Foundation's own
# link-time notes (mktemp, getpwnam in a static binary): they are not ours.
show_build_warnings() {
  grep -E "(warning|error):" "$1" | grep -v -E "swift_static|libFoundation|statically linked applications" >&2 || true
}

# Builds the package (debug unless LOCKSTEP_CONFIG=release, then linked as release_link_flags
# says; extra arguments go to swift build) and sets LOCKSTEP_BIN.
build_lockstep() {
  ensure_swift
  local config=${LOCKSTEP_CONFIG:-debug}
  say "building Lockstep ($config)"
  local log flags=()
  [ "$config" = release ] && flags=("${release_link_flags[@]}")
  log=$(mktemp)
  if ! (cd "$LOCKSTEP_ROOT" && swift build -c "$config" --explicit-target-dependency-import-check error "${flags[@]}" "$@" >"$log" 2>&1); then
    cat "$log" >&2
    rm -f "$log"
    die "swift build failed"
  fi
  show_build_warnings "$log"
  rm -f "$log"
  LOCKSTEP_BIN=$(cd "$LOCKSTEP_ROOT" && swift build -c "$config" --show-bin-path)
  [ -x "$LOCKSTEP_BIN/lockstepd" ] || die "build failed (no $LOCKSTEP_BIN/lockstepd)"
  export LOCKSTEP_BIN
}
