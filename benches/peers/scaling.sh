#!/usr/bin/env bash
# Creates or completes the peers venv (PyPI only) under target/peers-venv, then runs scaling.py.
# Usage: benches/peers/scaling.sh [--sizes 10000,43000,500000] [--only flowvec,int8,hnswlib,glass,symqg]
#                                 [--repeat N] [--no-threads] [--fresh]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/target/peers-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import hnswlib, glass, rabitqlib, numpy, matplotlib' 2>/dev/null; then
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet hnswlib pyglass-portable rabitqlib numpy matplotlib
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 RAYON_NUM_THREADS=1
cd "$root"
exec "$venv/bin/python" "$root/benches/peers/scaling.py" "$@"
