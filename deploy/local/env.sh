# Sourced by the project's scripts: makes sure the tools exist and ringtail is installed in a
# virtualenv ($RINGTAIL_VENV, default .venv in the project), then sets $ROOT and $PY.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${RINGTAIL_VENV:-$ROOT/.venv}"

need_apt=()
command -v java >/dev/null || need_apt+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need_apt+=(maven)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing: ${need_apt[*]} (install them, or run as root to have them installed)" >&2
    exit 1
  fi
  echo "[env] installing ${need_apt[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PYTHON="${RINGTAIL_PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "ringtail needs Python >= 3.11 (set RINGTAIL_PYTHON)" >&2
  exit 1
fi

stamp="$VENV/.ringtail-installed"
if [ ! -x "$VENV/bin/python" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  echo "[env] installing ringtail and its dependencies into $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check --upgrade pip
  "$VENV/bin/pip" install -q --disable-pip-version-check -e "$ROOT[dev]"
  touch "$stamp"
fi
PY="$VENV/bin/python"
