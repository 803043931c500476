import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from dedupd_testing import Server  # noqa: E402


@pytest.fixture
def server(tmp_path):
    s = Server(str(tmp_path / "data")).start()
    yield s
    s.stop()


@pytest.fixture
def make_server(tmp_path):
    """make_server(flags, name="data"): more servers, stopped at the end."""
    started = []

    def make(flags=(), name="data"):
        s = Server(str(tmp_path / name), flags).start()
        started.append(s)
        return s
    yield make
    for s in started:
        s.stop()
