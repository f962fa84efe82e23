"""The MySQL sink's pure parts: strict JSON for MariaDB's JSON columns, the DSN, and rows as LOAD DATA
reads them."""
from __future__ import annotations

import datetime as dt

import pytest

from spark.sinks.mysql.connection import connect_dsn
from spark.sinks.mysql.load import Target, load_text
from spark.sinks.mysql.log import json_text


def test_json_text_is_strict_json_with_non_finite_numbers_as_strings():
    assert json_text('[1.5, NaN, Infinity, -Infinity, {"a": NaN}]') == '[1.5,"NaN","Infinity","-Infinity",{"a":"NaN"}]'
    assert json_text('"żółw"') == '"żółw"'


@pytest.mark.parametrize("dsn", ["postgresql://u@h/db", "mysql://u@h", "mysql://u@h/"])
def test_a_dsn_that_names_no_mysql_database_is_refused(dsn):
    with pytest.raises(ValueError, match="give it as mysql://user"):
        connect_dsn(dsn)


def test_rows_are_load_datas_text_with_its_escapes_nulls_and_hex():
    rows = [("tab\there\nnewline \\N back\\slash", None, True, False, -7, 1e300, -0.0, b"\x00\xff"),
            ("\\N", "NULL", "", dt.datetime(1970, 1, 1, 0, 0, 0, 123000), dt.date(999, 12, 31), 2**63, 0.1, b"")]
    assert load_text(rows) == (
        b"tab\\there\\nnewline \\\\N back\\\\slash\t\\N\t1\t0\t-7\t1e+300\t-0.0\t00ff\n"
        b"\\\\N\tNULL\t\t1970-01-01 00:00:00.123000\t0999-12-31\t9223372036854775808\t0.1\t\n")
    assert load_text([("żółw 😀",)]) == "żółw 😀\n".encode()
    with pytest.raises(TypeError, match="no LOAD DATA text for a value of type object"):
        load_text([(object(),)])


def test_a_target_loads_bytes_through_unhex_and_replaces_or_keeps_a_row_of_the_same_key():
    target = Target("`ks`.`t`", ("k", "we`ird", "data"), frozenset(("k", "data")), replace=True)
    assert target.load_statement() == (
        "LOAD DATA LOCAL INFILE %s REPLACE INTO TABLE `ks`.`t` CHARACTER SET utf8mb4 (@v0, `we``ird`, @v2)"
        " SET `k` = UNHEX(@v0), `data` = UNHEX(@v2)")
    assert target.insert_statement() == "REPLACE INTO `ks`.`t` (`k`, `we``ird`, `data`) VALUES (%s, %s, %s)"
    kept = Target("`ks`.`log`", ("id", "v"))
    assert kept.load_statement() == "LOAD DATA LOCAL INFILE %s IGNORE INTO TABLE `ks`.`log` CHARACTER SET utf8mb4" \
                                    " (`id`, `v`)"
    assert kept.insert_statement() == ("INSERT INTO `ks`.`log` (`id`, `v`) VALUES (%s, %s)"
                                       " ON DUPLICATE KEY UPDATE `id` = `id`")
