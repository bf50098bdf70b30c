#!/usr/bin/env bash
# The benchmark corpora of tools/bench.py, from Debian packages and this machine's Python.
#
#   tools/make_corpora.sh [DIR]        (default: $TMPDIR/bpe-corpora, i.e. /tmp/bpe-corpora)
#
#   english.txt       ~40 MB  the GCIDE dictionary (package dict-gcide), uncompressed
#   english10.txt      10 MB  the first 10,000,000 bytes of english.txt
#   multilingual.txt  ~4 MB   Chinese, German and Spanish fortunes (fortunes-zh, -de, -es),
#                             without their "%" separator lines
#   code.txt           20 MB  the Python standard library's .py files (no site-packages),
#                             in path order, cut at 20,000,000 bytes
#
# Missing packages are installed with apt-get (needs root and a package mirror).  Files
# that exist are kept.  Prints the files at the end.
set -euo pipefail

out=${1:-${TMPDIR:-/tmp}/bpe-corpora}
gcide=/usr/share/dictd/gcide.dict.dz
fortunes=/usr/share/games/fortunes

missing=()
test -f "$gcide" || missing+=(dict-gcide)
test -f "$fortunes/chinese" || missing+=(fortunes-zh)
test -d "$fortunes/de" || missing+=(fortunes-de)
test -d "$fortunes/es" || missing+=(fortunes-es)
if ((${#missing[@]})); then
  echo "installing ${missing[*]} ..." >&2
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null 2>&1; then
    echo "make_corpora.sh: could not install ${missing[*]} (apt-get needs root and a mirror)" >&2
    exit 1
  fi
fi

mkdir -p "$out"
cd "$out"

# each file is written under a temporary name and renamed when complete
build() {  # build NAME COMMAND...: run COMMAND > NAME unless NAME exists
  local name=$1
  shift
  [[ -s $name ]] && return
  "$@" > "$name.part"
  mv "$name.part" "$name"
}

build english.txt gzip -dc "$gcide"
build english10.txt head -c 10000000 english.txt
build multilingual.txt sh -c "cat '$fortunes/chinese' '$fortunes/de/zitate' '$fortunes/es/refranes.fortunes' | grep -av '^%\$'"
build code.txt python3 -c '
import os, sys, sysconfig
root = sysconfig.get_paths()["stdlib"]
files = []
for here, dirs, names in os.walk(root):
    rel = os.path.relpath(here, root)
    parts = [] if rel == os.curdir else rel.split(os.sep)
    if "site-packages" not in parts:
        files += [parts + [n] for n in names if n.endswith(".py")]
left = 20_000_000
for parts in sorted(files):  # by path components, directory by directory
    if left <= 0:
        break
    with open(os.path.join(root, *parts), "rb") as f:
        data = f.read(left)
    sys.stdout.buffer.write(data)
    left -= len(data)
'

ls -l "$out"/*.txt
