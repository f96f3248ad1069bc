"""The rank's files: the timings, the heartbeat and the source record (docs/timings.md)."""

import json
import os
import time

from ddprun._records import PROGRESS_BYTES, RankFiles, WallClock, rank_file


def test_rank_file_names_the_rank_in_five_digits(tmp_path):
    assert rank_file(str(tmp_path), 7, ".jsonl") == os.path.join(str(tmp_path), "timings", "rank-00007.jsonl")


def test_nothing_is_created_before_the_first_write(tmp_path):
    RankFiles(str(tmp_path), 0, 2)
    assert not os.path.exists(os.path.join(str(tmp_path), "timings"))


def test_timings_are_truncated_at_the_first_write_then_appended(tmp_path):
    path = rank_file(str(tmp_path), 0, ".jsonl")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        f.write("left by an earlier run\n")
    files = RankFiles(str(tmp_path), 0, 2)
    files.write_lines('{"step":0}\n')
    files.write_lines('{"step":1}\n')
    with open(path) as f:
        assert f.read() == '{"step":0}\n{"step":1}\n'


def test_the_heartbeat_is_one_padded_line_of_48_bytes(tmp_path):
    files = RankFiles(str(tmp_path), 3, 4)
    files.progress(12, "backward")
    with open(files.progress_path, "rb") as f:
        data = f.read()
    assert len(data) == PROGRESS_BYTES
    assert data.rstrip(b" \n") == b"12 backward" and data.endswith(b"\n")
    files.progress(13, "x" * 100)  # cut, never longer
    with open(files.progress_path, "rb") as f:
        data = f.read()
    assert len(data) == PROGRESS_BYTES and data.count(b"\n") == 1


def test_the_source_record_is_replaced_whole_with_the_rank(tmp_path):
    files = RankFiles(str(tmp_path), 2, 4)
    files.write_source({"source": "python-auto", "notes": []})
    files.write_source({"source": "python-api", "notes": ["n"]})
    with open(files.source_path) as f:
        assert json.load(f) == {"source": "python-api", "notes": ["n"], "rank": 2}
    assert os.listdir(os.path.dirname(files.source_path)) == [os.path.basename(files.source_path)]


def test_wall_clock_maps_perf_counter_to_unix_microseconds():
    clock = WallClock()
    now = time.perf_counter()
    assert abs(clock.unix_us(now) - time.time() * 1e6) < 50_000
    assert clock.unix_us(now + 1.0) - clock.unix_us(now) == 1_000_000
