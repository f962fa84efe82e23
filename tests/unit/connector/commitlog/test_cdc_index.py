from pathlib import Path

from connector.commitlog.cdc_index import CdcIndex, indexed_segments, read_cdc_index


def test_live_and_completed_index(tmp_path: Path) -> None:
    (tmp_path / "CommitLog-7-1_cdc.idx").write_text("4096")
    (tmp_path / "CommitLog-7-2_cdc.idx").write_text("1048576\nCOMPLETED")
    assert read_cdc_index(tmp_path / "CommitLog-7-1_cdc.idx") == CdcIndex(4096, False)
    assert indexed_segments(tmp_path) == {
        tmp_path / "CommitLog-7-1.log": CdcIndex(4096, False),
        tmp_path / "CommitLog-7-2.log": CdcIndex(1048576, True),
    }


def test_missing_or_mid_rewrite_index_reads_as_none(tmp_path: Path) -> None:
    (tmp_path / "CommitLog-7-3_cdc.idx").write_text("")
    (tmp_path / "CommitLog-7-4_cdc.idx").write_text("COMPLETED")
    assert read_cdc_index(tmp_path / "CommitLog-7-3_cdc.idx") is None
    assert read_cdc_index(tmp_path / "CommitLog-7-4_cdc.idx") is None
    assert read_cdc_index(tmp_path / "CommitLog-7-5_cdc.idx") is None
    assert indexed_segments(tmp_path) == {}
