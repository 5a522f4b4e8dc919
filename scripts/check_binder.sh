#!/usr/bin/env bash
# Build a fresh virtual environment from binder/ files only (as Binder would, minus apt.txt),
# then execute every notebook of the series in it. Exit status 0 when all ran.
#   scripts/check_binder.sh            check
#   scripts/check_binder.sh --freeze   regenerate binder/requirements.txt (lab + quant extras)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q --upgrade pip
if [ "${1:-}" = "--freeze" ]; then
  "$py" -m pip install -q -c "$root/requirements/constraints.txt" "$root[lab,quant]"
  { echo "# Binder environment: hetlab's core + lab extras, pinned (no CUDA, no torch, no pynq)."
    echo "# Regenerate: scripts/check_binder.sh --freeze"
    "$py" -m pip freeze | grep -viE '^(hetlab|-e)'; } > "$root/binder/requirements.txt"
  echo "wrote binder/requirements.txt"
  exit 0
fi
"$py" -m pip install -q -r "$root/binder/requirements.txt"
cp -r "$root" "$work/repo"   # postBuild installs the checkout in place, as repo2docker does
(cd "$work/repo" && PATH="$work/venv/bin:$PATH" bash binder/postBuild)
cd "$work/repo/notebooks"
for nb in [0-9][0-9]-*.ipynb; do
  start=$EPOCHREALTIME
  "$work/venv/bin/jupyter" nbconvert --to notebook --execute --output-dir "$work/out" \
    --ExecutePreprocessor.timeout=600 "$nb" >/dev/null 2>"$work/err.log" \
    || { echo "FAIL $nb"; cat "$work/err.log"; exit 1; }
  awk -v nb="$nb" -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "ok   %s  %.1f s\n", nb, b - a }'
done
