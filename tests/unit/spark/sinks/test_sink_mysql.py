"""The MySQL sink's pure parts: strict JSON for MariaDB's JSON columns, and the DSN."""
from __future__ import annotations

import pytest

from spark.sinks.mysql.connection import connect_dsn
from spark.sinks.mysql.log import json_text


def test_json_text_is_strict_json_with_non_finite_numbers_as_strings():
    assert json_text('[1.5, NaN, Infinity, -Infinity, {"a": NaN}]') == '[1.5,"NaN","Infinity","-Infinity",{"a":"NaN"}]'
    assert json_text('"żółw"') == '"żółw"'


@pytest.mark.parametrize("dsn", ["postgresql://u@h/db", "mysql://u@h", "mysql://u@h/"])
def test_a_dsn_that_names_no_mysql_database_is_refused(dsn):
    with pytest.raises(ValueError, match="give it as mysql://user"):
        connect_dsn(dsn)
