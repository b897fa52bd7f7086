#!/usr/bin/env bash
# Creates the peers venv (PyPI only) under target/peers-venv if missing, then runs peers.py.
# Usage: benches/peers/run.sh [--quick] [--data DIR] [--repeat N] [--rounds N] [--only native,hnswlib,...]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/target/peers-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import hnswlib, faiss, usearch, numpy, scipy, matplotlib' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet hnswlib faiss-cpu usearch numpy scipy matplotlib
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 RAYON_NUM_THREADS=1
cd "$root"
exec "$venv/bin/python" "$root/benches/peers/peers.py" "$@"
