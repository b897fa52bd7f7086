#!/usr/bin/env bash
# Creates the peers venv (PyPI only) under target/peers-venv if missing, installs any missing
# package into it, then runs peers.py.
# Usage: benches/peers/run.sh [--quick] [--data DIR] [--repeat N] [--rounds N] [--limit N]
#                             [--only native,int8,hnswlib,faiss,faiss_sq8,glass,symqg,usearch,hnsw_rs,sparse,scipy,seismic,bmp,filtered,flow]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/target/peers-venv"
# PyPI names and the modules they install: faiss-cpu -> faiss, rabitqlib -> rabitqlib (SymphonyQG),
# pyglass-portable -> glass, pyseismic-lsr -> seismic, bmp -> bmp.
packages="hnswlib faiss-cpu usearch numpy scipy matplotlib rabitqlib pyglass-portable pyseismic-lsr bmp"
modules="hnswlib, faiss, usearch, numpy, scipy, matplotlib, rabitqlib, glass, seismic, bmp"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import $modules" 2>/dev/null; then
    # pip skips the packages already installed.
    "$venv/bin/pip" install --quiet $packages
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 RAYON_NUM_THREADS=1
cd "$root"
exec "$venv/bin/python" "$root/benches/peers/peers.py" "$@"
