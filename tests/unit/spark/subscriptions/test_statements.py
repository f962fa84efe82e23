"""The statement form parses into the same verbs and changes as the command line; errors name the position."""
import pytest

from spark.subscriptions.model import Change, InvalidSubscription, Subscription
from spark.subscriptions.statements import Statement, StatementError, parse_statement


def test_create_with_every_clause():
    statement = parse_statement(
        "create subscription audit ON shop.\"Orders\" TO postgres WITH dsn = 'postgresql://x@h/db', "
        "schema = 'it''s' COLUMNS (qty, \"Note\") OPERATIONS (INSERT, update) START '2026-01-01T00:00:00+00:00' "
        "WHERE quantity > 5 AND `cdc$operation` = 2;")
    assert statement == Statement("create", "audit", Change(
        table='shop.Orders', sink="postgres", sink_config={"dsn": "postgresql://x@h/db", "schema": "it's"},
        columns=("qty", "Note"), operations=("insert", "update"), start="2026-01-01T00:00:00+00:00",
        filter="quantity > 5 AND `cdc$operation` = 2"))


@pytest.mark.parametrize("text, statement", [
    ("PAUSE SUBSCRIPTION audit", Statement("pause", "audit")),
    ("resume subscription audit;", Statement("resume", "audit")),
    ("DROP SUBSCRIPTION \"odd-name\"", Statement("cancel", "odd-name")),
    ("SHOW SUBSCRIPTIONS", Statement("list")),
    ("SHOW SUBSCRIPTIONS ON shop.orders", Statement("list", table="shop.orders")),
    ("ALTER SUBSCRIPTION audit RESET TO 'earliest'", Statement("reset", "audit", Change(start="earliest"))),
    ("ALTER SUBSCRIPTION audit WITH dsn = 'x' WHERE qty < 3",
     Statement("alter", "audit", Change(sink_config={"dsn": "x"}, filter="qty < 3"))),
])
def test_other_statements(text, statement):
    assert parse_statement(text) == statement


@pytest.mark.parametrize("text, position, message", [
    ("CREATE SUBSCRIPTION audit shop.orders TO delta", 27, "expected ON"),
    ("CREATE SUBSCRIPTION audit ON shop TO delta", 35, "expected '.'"),
    ("PAUSE SUBSCRIPTION", 19, "expected a subscription name, the statement ends"),
    ("PAUSE SUBSCRIPTION a b", 22, "unexpected text after the statement"),
    ("SELECT * FROM x", 1, "expected CREATE or ALTER"),
    ("CREATE SUBSCRIPTION a ON k.t TO delta WITH path = 'x' LIMIT 3", 55, "expected WITH or COLUMNS"),
    ("CREATE SUBSCRIPTION a ON k.t TO delta WHERE", 44, "expected a filter expression, the statement ends"),
    ("ALTER SUBSCRIPTION a", 21, "needs WITH, WHERE or RESET TO"),
    ("CREATE SUBSCRIPTION a ON k.t TO delta WITH path = 'x", 51, "unexpected \"'\""),
])
def test_a_statement_that_does_not_parse_names_the_position(text, position, message):
    with pytest.raises(StatementError, match=message) as raised:
        parse_statement(text)
    assert raised.value.position == position
    assert f"at character {position}" in str(raised.value)


def test_sinks_and_their_settings_are_checked():
    change = Change(table="shop.orders", sink="postgres", sink_config={"dsn": "x"})
    assert Subscription.create("audit", change).sink_config == {"dsn": "x"}
    with pytest.raises(InvalidSubscription, match="unknown sink 'mongo'"):
        Subscription.create("audit", Change(table="shop.orders", sink="mongo"))
    with pytest.raises(InvalidSubscription, match="sink postgres needs dsn"):
        Subscription.create("audit", Change(table="shop.orders", sink="postgres"))
    with pytest.raises(InvalidSubscription, match="has no setting 'colour'"):
        Subscription.create("audit", Change(table="shop.orders", sink="delta", sink_config={"path": "p",
                                                                                          "colour": "red"}))


@pytest.mark.parametrize("change, message", [
    (Change(table="orders", sink="delta", sink_config={"path": "p"}), "keyspace.table"),
    (Change(table="s.o", sink="delta", sink_config={"path": "p"}, operations=("upsert",)), "operations are"),
    (Change(table="s.o", sink="delta", sink_config={"path": "p"}, start="yesterday"), "start 'yesterday'"),
])
def test_bad_fields_are_named(change, message):
    with pytest.raises(InvalidSubscription, match=message):
        Subscription.create("audit", change)


def test_names_are_checked():
    with pytest.raises(InvalidSubscription, match="subscription name '1st'"):
        Subscription.create("1st", Change(table="s.o", sink="delta", sink_config={"path": "p"}))


def test_alter_merges_sink_settings_and_an_empty_filter_removes_it():
    created = Subscription.create("a", Change(table="s.o", sink="postgres", sink_config={"dsn": "x"},
                                              filter="qty > 1"))
    altered = created.altered(Change(sink_config={"schema": "audit"}, filter=" "))
    assert altered.sink_config == {"dsn": "x", "schema": "audit"} and altered.filter is None
