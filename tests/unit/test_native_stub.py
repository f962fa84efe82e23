"""`schemas/_native.pyi` says what the native module is: every class, property and method of the built
module is in the stub, with the same parameters (names, order, which have defaults), and nothing else is."""
from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from connector.native_core import ColumnSpec, TableSpec
from schemas import _native
from schemas.avro.table import SourceInfo

STUB = ast.parse((Path(_native.__file__).parent / "_native.pyi").read_text())
# The module's classes; the stub's protocols describe the Python objects it reads by attribute.
CLASSES = {node.name: node for node in STUB.body if isinstance(node, ast.ClassDef)
           and not any(isinstance(base, ast.Name) and base.id == "Protocol" for base in node.bases)}


def stub_members(cls: ast.ClassDef) -> dict[str, tuple[str, list[tuple[str, bool]]]]:
    """name → (property | method, [(parameter, has a default)] without self)."""
    out = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and (node.name == "__init__" or not node.name.startswith("__")):
            kind = "property" if any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list) \
                else "method"
            positional = node.args.args[1:]
            defaults = len(node.args.defaults)
            params = [(a.arg, i >= len(positional) - defaults) for i, a in enumerate(positional)]
            out[node.name] = (kind, params)
    return out


def native_members(cls: type) -> dict[str, tuple[str, list[tuple[str, bool]]]]:
    # A class Python code cannot make (only the module returns one) has no signature, and no __init__ in the stub.
    out = {} if cls.__text_signature__ is None else {"__init__": ("method", signature(cls.__text_signature__))}
    for name, value in vars(cls).items():
        if name.startswith("__"):
            continue
        if inspect.isgetsetdescriptor(value) or inspect.ismemberdescriptor(value):
            out[name] = ("property", [])
        else:
            out[name] = ("method", signature(value.__text_signature__.replace("$self, ", "").replace("$self", "")))
    return out


def signature(text: str) -> list[tuple[str, bool]]:
    arguments = ast.parse(f"def f{text}: pass").body[0].args
    defaults = len(arguments.defaults)
    return [(a.arg, i >= len(arguments.args) - defaults) for i, a in enumerate(arguments.args)]


def test_the_stub_names_every_class_of_the_module_and_no_other():
    assert set(CLASSES) == {name for name in dir(_native) if isinstance(getattr(_native, name), type)}


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_a_class_s_members_and_parameters_are_the_module_s(name):
    assert stub_members(CLASSES[name]) == native_members(getattr(_native, name))


READ_BY_ATTRIBUTE = {"ColumnSpecLike": ColumnSpec, "TableSpecLike": TableSpec, "SourceLike": SourceInfo}


def test_the_objects_the_module_reads_by_attribute_have_the_stub_s_fields():
    protocols = {node.name: node for node in STUB.body if isinstance(node, ast.ClassDef) and node.name not in CLASSES}
    assert set(protocols) == set(READ_BY_ATTRIBUTE)
    for name, cls in READ_BY_ATTRIBUTE.items():
        fields = [node.target.id for node in protocols[name].body if isinstance(node, ast.AnnAssign)]
        assert fields and set(fields) <= {f.name for f in dataclasses.fields(cls)}, name


def test_the_stub_names_every_function_of_the_module_with_its_parameters():
    stubbed = {node.name: [(a.arg, i >= len(node.args.args) - len(node.args.defaults))
                           for i, a in enumerate(node.args.args)]
               for node in STUB.body if isinstance(node, ast.FunctionDef)}
    native = {name: signature(value.__text_signature__) for name, value in vars(_native).items()
              if inspect.isbuiltin(value)}
    assert stubbed and stubbed == native
