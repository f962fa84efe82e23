"""Type strings as system_schema stores them."""
from types import SimpleNamespace

import pytest

from schemas.cql import (CqlTypeError, ListType, MapType, SetType, TupleType, UnsupportedType, UserType,
                           VectorType, maybe_quote, parse_type, type_arguments, type_name)

TYPES = {
    "addr": SimpleNamespace(field_names=("street", "zip"), field_types=("text", "int")),
    "person": SimpleNamespace(field_names=("home", "tags"), field_types=("frozen<addr>", "set<text>")),
    "Quoted": SimpleNamespace(field_names=("x",), field_types=("int",)),
    "loop": SimpleNamespace(field_names=("me",), field_types=("frozen<loop>",)),
}


def test_nested_frozen_collections():
    t = parse_type("frozen<map<text, frozen<list<int>>>>")
    assert isinstance(t, MapType) and not t.multi_cell
    assert isinstance(t.value, ListType) and not t.value.multi_cell
    assert t.cql == "frozen<map<text, frozen<list<int>>>>"


def test_non_frozen_collection_is_multi_cell_but_its_elements_are_frozen():
    t = parse_type("map<text, frozen<set<int>>>")
    assert t.multi_cell and isinstance(t.value, SetType) and not t.value.multi_cell


def test_vector():
    t = parse_type("vector<float, 3>")
    assert isinstance(t, VectorType) and t.dimension == 3 and t.fixed_length == 12


def test_tuple_is_never_multi_cell():
    t = parse_type("tuple<int, text>")
    assert isinstance(t, TupleType) and not t.multi_cell and t.cql == "frozen<tuple<int, text>>"


def test_udts_resolve_against_the_keyspace():
    person = parse_type("person", TYPES, "ks")
    assert isinstance(person, UserType) and person.multi_cell
    home, tags = person.field_types
    assert isinstance(home, UserType) and not home.multi_cell
    assert isinstance(tags, SetType) and not tags.multi_cell  # fields are never multi-cell
    assert not parse_type("frozen<person>", TYPES, "ks").multi_cell
    assert parse_type('"Quoted"', TYPES, "ks").field_names == ("x",)
    assert parse_type("ks.addr", TYPES, "ks").name == "addr"


def test_case_and_aliases():
    assert parse_type("VARCHAR").cql == "text"
    assert parse_type("Frozen<List<Int>>").cql == "frozen<list<int>>"


@pytest.mark.parametrize("text, error", [
    ("'org.apache.cassandra.db.marshal.DateType'", UnsupportedType),
    ("nosuchtype", CqlTypeError),
    ("list<int", CqlTypeError),
    ("map<int>", CqlTypeError),
    ("int int", CqlTypeError),
    ("vector<float, 0>", CqlTypeError),
    ("loop", CqlTypeError),
    ("other.addr", CqlTypeError),
    ("list<int>;", CqlTypeError),
])
def test_errors(text, error):
    with pytest.raises(error):
        parse_type(text, TYPES, "ks")


@pytest.mark.parametrize("text, arguments", [
    ("map<text, frozen<list<int>>>", ["text", "frozen<list<int>>"]),
    ('list<frozen<"My, <Type>">>', ['frozen<"My, <Type>">']),
    (' set< "a,b" > ', ['"a,b"']),
    ("frozen<map<int, text>>", ["map<int, text>"]),
    ("vector<float, 3>", ["float", "3"]),
    ("int", []),
])
def test_type_arguments_as_written(text, arguments):
    assert type_arguments(text) == arguments


@pytest.mark.parametrize("text, name", [
    ("list<frozen<address>>", "list"), (" LIST <int>", "list"), ("frozen<list<int>>", "frozen"),
    ('"MyType"', "MyType"), ("int", "int"),
])
def test_type_name_is_the_outermost_without_resolving_inside(text, name):
    assert type_name(text) == name


def test_type_name_of_no_name_is_an_error():
    with pytest.raises(CqlTypeError, match="does not start with a name"):
        type_name("<int>")


@pytest.mark.parametrize("name, written", [
    ("address", "address"), ("MyType", '"MyType"'), ("has space", '"has space"'), ('q"uote', '"q""uote"'),
    ("select", '"select"'), ("_x", '"_x"'), ("a1_b", "a1_b"),
])
def test_names_are_quoted_as_cassandra_writes_them(name, written):
    assert maybe_quote(name) == written


def test_a_case_sensitive_udt_is_written_quoted():
    types = {"MyType": SimpleNamespace(field_names=("a",), field_types=("int",))}
    assert parse_type('frozen<"MyType">', types, "ks").cql == 'frozen<"MyType">'
