#!/usr/bin/env bash
# python-package-check.sh MODE: ddprun's Python package (python/) as a package, with the tools of
# the torch-2 environment (PY, .venv-torch2/bin/python):
#   unit     its pytest unit tests (python/tests: records, steps, state, boot)
#   lint     ruff check (python/pyproject.toml's rules)
#   types    mypy (every function typed but in _auto)
#   install  pip install ./python into a new venv; the installed package imports, with the
#            project's version, outside the source tree
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
package=$(cd "$here/../../python" && pwd)
py=${PY:?PY: the torch-2 environment\'s Python}
bin=$(dirname "$py")
cd "$package"
case ${1:-} in
  unit) exec "$py" -m pytest -q -p no:cacheprovider ;;
  lint) exec "$bin/ruff" check --no-cache ddprun boot tests ;;
  types) exec "$bin/mypy" --cache-dir=/dev/null ;;
  install)
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    "$py" -m venv "$work/venv"
    # From a copy: setuptools builds in the source folder (build/, *.egg-info).
    cp -r "$package" "$work/src"
    "$work/venv/bin/pip" install -q --disable-pip-version-check "$work/src" 2>&1 | grep -v "^WARNING: Location" || true
    cd "$work"
    version=$("$work/venv/bin/python" -c 'import ddprun, os; print(ddprun.__version__, os.path.dirname(ddprun.__file__))')
    want=$(sed -n 's/^project(ddprun VERSION \([0-9.]*\).*/\1/p' "$package/../CMakeLists.txt")
    [[ $version == "$want $work/venv/"* ]] || { echo "FAIL: installed ddprun: '$version', want $want in the venv"; exit 1; }
    "$work/venv/bin/python" -c 'import ddprun; assert not ddprun.active(); print("ok: installed ddprun", ddprun.__version__)'
    ;;
  *) echo "usage: python-package-check.sh unit|lint|types|install" >&2; exit 2 ;;
esac
