#!/usr/bin/env python3
"""Train a tokenizer, or encode a corpus with one, on a Dask cluster: a driver script for
`bpe train --dask` and `bpe encode --dask` (the library's `train_files(..., dask=)` and
`encode_files(..., dask=)`), with the cluster's address in one place.

    python tools/train_dask.py train INPUT... --vocab-size N [-o tokenizer.bpe] [OPTIONS]
    python tools/train_dask.py encode -t TOKENIZER INPUT... -o train.bin [OPTIONS]

--scheduler ADDRESS: a scheduler's address or scheduler file, or `local` / `local:N` (a local
cluster of N worker processes; the default). Every other option is the `bpe` command's
(`bpe train --help`, `bpe encode --help`); the outputs are the files it writes without a
cluster, byte for byte. Inputs are paths, globs or fsspec URLs the workers can read.
"""

import sys


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    address = "local"
    if "--scheduler" in argv:
        k = argv.index("--scheduler")
        if k + 1 >= len(argv):
            print("train_dask: error: --scheduler needs an address", file=sys.stderr)
            return 2
        address = argv[k + 1]
        del argv[k:k + 2]
    if not argv or argv[0] not in ("train", "encode"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        from bpe import main as bpe_main
    except ImportError:   # a checkout without the package installed: its pure-Python module
        from bpe_fallback import main as bpe_main
    return bpe_main(argv + ["--dask", address])


if __name__ == "__main__":
    sys.exit(main())
