"""An fsspec filesystem of this machine's files whose reads wait: Dask tasks that read
through it run long enough for a test to kill the worker running one (tests of faults)."""

import time

from fsspec.implementations.local import LocalFileSystem

DELAY = 0.25  # seconds per read of a range


class SlowFileSystem(LocalFileSystem):
    """slow:///path: the file /path, each cat_file (a worker's read of its chunk) slowed."""

    protocol = ("slow",)

    def cat_file(self, path, start=None, end=None, **kwargs):
        time.sleep(DELAY)
        return super().cat_file(path, start=start, end=end, **kwargs)


def register():
    import fsspec

    fsspec.register_implementation("slow", SlowFileSystem, clobber=True)
