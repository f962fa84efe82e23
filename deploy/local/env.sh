# Sourced by the project's scripts: makes sure the tools exist and ringtail is installed in a
# virtualenv ($RINGTAIL_STACK_VENV, default .venv in the project), then sets $ROOT and $PY.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${RINGTAIL_STACK_VENV:-$ROOT/.venv}"

# need COMMAND:DEBIAN_PACKAGE ...: installs (through apt, as root) the packages of the commands missing.
need() {
  local missing=() pair
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "missing: ${missing[*]} (install them, or run as root to have them installed)" >&2
    exit 1
  fi
  echo "[env] installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

[ -d "$HOME/.cargo/bin" ] && PATH="$HOME/.cargo/bin:$PATH"  # rustup's toolchain, where installed
# The native core (the cargo workspace in Cargo.toml) is Rust: Debian's cargo-web is a recent enough toolchain.
need java:openjdk-17-jdk-headless mvn:maven cargo:cargo-web cc:gcc
# The secured stack makes its certificates with openssl (deploy/local/secure.py).
need openssl:openssl

PYTHON="${RINGTAIL_STACK_PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "ringtail needs Python >= 3.11 (set RINGTAIL_STACK_PYTHON)" >&2
  exit 1
fi

stamp="$VENV/.ringtail-installed"
if [ ! -x "$VENV/bin/python" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  echo "[env] installing ringtail and its dependencies into $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check --upgrade pip
  "$VENV/bin/pip" install -q --disable-pip-version-check -e "$ROOT[dev]"
  touch "$stamp"
elif [ -n "$(find "$ROOT/Cargo.toml" "$ROOT/native" "$ROOT/schemas/native" "$ROOT/connector/native" "$ROOT/spark/native" -newer "$stamp" -type f -print -quit)" ]; then
  echo "[env] rebuilding the native core"
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -e "$ROOT"
  touch "$stamp"
fi
PY="$VENV/bin/python"
