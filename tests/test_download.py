"""Checksummed files: local verification and pooch downloads from a real HTTP server on 127.0.0.1."""

import functools
import hashlib
import http.server
import shutil
import threading

import pytest

from automil.data.files import CACHE_DIR_ENV, DATA_DIR_ENV, DataFile, DataFileError, fetch
from automil.data.readers import read_bags
from automil_datasets.catalog import BENCHMARK_FILES

MUSK1 = next(entry for entry in BENCHMARK_FILES if entry.name == "musk1")


class CountingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a directory and records every requested path."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.requests.append(self.path)
        super().do_GET()


@pytest.fixture
def server(tmp_path):
    """An HTTP server on a free port of 127.0.0.1 serving ``tmp_path / 'served'``."""
    root = tmp_path / "served"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            functools.partial(CountingHandler, directory=str(root)))
    httpd.requests = []
    httpd.root = root
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture
def dirs(tmp_path, monkeypatch):
    """An empty data directory and an empty download cache, both under tmp_path."""
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    monkeypatch.setenv(DATA_DIR_ENV, str(data))
    monkeypatch.setenv(CACHE_DIR_ENV, str(cache))
    return data, cache


def files_under(path):
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


def serve(server, name, content: bytes) -> str:
    (server.root / name).write_bytes(content)
    return f"{server.url}/{name}"


def test_a_wrong_sha256_download_is_an_error_and_leaves_nothing_in_the_cache(server, dirs):
    _, cache = dirs
    url = serve(server, "musk1.data", b"not the registered bytes\n")
    expected = hashlib.sha256(b"the registered bytes\n").hexdigest()
    with pytest.raises(DataFileError) as caught:
        fetch(DataFile("musk1/musk1.data", expected, url))
    message = str(caught.value)
    assert "musk1/musk1.data" in message and url in message and "checksum" in message
    assert expected in message and hashlib.sha256(b"not the registered bytes\n").hexdigest() in message
    assert "AUTOMIL_DATA_DIR" in message
    assert server.requests == ["/musk1.data"]
    assert files_under(cache) == []
    assert not (cache / "musk1").exists()


def test_a_correct_download_lands_in_the_cache_and_the_second_fetch_uses_it(data_dir, server, dirs):
    _, cache = dirs
    url = serve(server, "musk1.data", (data_dir / MUSK1.path).read_bytes())
    datafile = DataFile(MUSK1.path, MUSK1.sha256, url)
    first = fetch(datafile)
    assert first == cache / MUSK1.path
    assert files_under(cache) == [first]
    assert read_bags(first, format=MUSK1.format).n_bags == MUSK1.n_bags
    assert fetch(datafile) == first
    assert server.requests == ["/musk1.data"]


def test_a_cached_file_that_changed_afterwards_fails_its_checksum(data_dir, server, dirs):
    url = serve(server, "musk1.data", (data_dir / MUSK1.path).read_bytes())
    datafile = DataFile(MUSK1.path, MUSK1.sha256, url)
    path = fetch(datafile)
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataFileError, match=f"{path}: checksum mismatch: sha256 expected {MUSK1.sha256}"):
        fetch(datafile)


def test_an_unreachable_server_is_an_error_naming_the_url_and_leaves_nothing(server, dirs):
    _, cache = dirs
    url = f"{server.url}/missing.data"
    with pytest.raises(DataFileError, match=r"could not download musk1/musk1.data from .*missing.data"):
        fetch(DataFile("musk1/musk1.data", "0" * 64, url))
    assert files_under(cache) == []


def test_a_corrupt_file_in_the_data_directory_names_file_and_both_hashes(dirs):
    data, _ = dirs
    path = data / "musk1" / "musk1.data"
    path.parent.mkdir()
    path.write_bytes(b"1,2,3\n")
    with pytest.raises(DataFileError) as caught:
        fetch(DataFile("musk1/musk1.data", MUSK1.sha256))
    message = str(caught.value)
    assert str(path) in message and MUSK1.sha256 in message
    assert hashlib.sha256(b"1,2,3\n").hexdigest() in message and "replace it with a good copy" in message


def test_the_data_directory_wins_over_the_cache(data_dir, dirs):
    data, cache = dirs
    for root in (data, cache):
        (root / "musk1").mkdir(parents=True)
        shutil.copy(data_dir / MUSK1.path, root / MUSK1.path)
    assert fetch(DataFile(MUSK1.path, MUSK1.sha256)) == data / MUSK1.path


def test_a_missing_file_without_url_says_where_it_looked_and_how_to_get_it(dirs):
    data, cache = dirs
    with pytest.raises(DataFileError) as caught:
        fetch(DataFile("musk2/musk2.csv", "0" * 64))
    message = str(caught.value)
    assert str(data / "musk2/musk2.csv") in message and str(cache / "musk2/musk2.csv") in message
    assert "AUTOMIL_DATA_DIR" in message and "--data-dir" in message
    assert "\n" not in message  # the CLI prints errors on one line
