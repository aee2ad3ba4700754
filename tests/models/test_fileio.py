"""``write_atomic``: a reader sees a whole file, and writers of the same file at once never trip on each other."""

from __future__ import annotations

import threading
from pathlib import Path

from voxserve.models.fileio import write_atomic


def test_writers_of_one_file_at_once_each_replace_it_whole(tmp_path: Path) -> None:
    """Two ``voxserve models fetch`` (or a server warming up beside one) write the same split graph: with
    one temporary name shared, one renamed the other's away and failed with FileNotFoundError."""
    target = tmp_path / "split" / "piper_front.onnx"
    contents = {n: bytes([n]) * 200_000 for n in range(4)}
    failures: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for _ in range(25):
                write_atomic(target, contents[n])
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in contents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert target.read_bytes() in contents.values()  # one writer's whole file, never a mix
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temporary left behind
