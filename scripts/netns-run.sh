#!/usr/bin/env bash
# Run a command inside a fresh network namespace that has only loopback (127.0.0.1, ::1), so
# nothing it starts can reach anything but servers on loopback in the SAME namespace.
#
#   scripts/netns-run.sh CMD [ARGS...]
#
# Needs root (`unshare -n`) or unprivileged user namespaces (`unshare -r -n`).
# A server on the host's 127.0.0.1 is NOT reachable from inside: start the fake servers inside
# too. The real-CLI tests (crates/geode/tests/it/cli_claude.rs, cli_codex.rs) re-run their own test
# binary through this script, so the in-process fake and the CLI share the namespace.
set -euo pipefail
if [ "$#" -eq 0 ]; then
  echo "usage: $0 CMD [ARGS...]" >&2
  exit 2
fi
if [ "${_GEODE_IN_NETNS:-}" != 1 ]; then
  if [ "$(id -u)" = 0 ]; then flags=(-n); else flags=(-r -n); fi
  exec env _GEODE_IN_NETNS=1 unshare "${flags[@]}" "$0" "$@"
fi
unset _GEODE_IN_NETNS
ip link set lo up
exec "$@"
