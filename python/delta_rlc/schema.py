"""Delta schema types with deltalake's API: ``PrimitiveType``, ``ArrayType``, ``MapType``,
``StructType``, ``Field``, ``Schema`` and ``VariantType``.

Each converts to and from the Delta log's JSON (``to_json``/``from_json``) and Arrow
(``to_arrow`` returns an arro3 object when arro3 is installed, as deltalake does, else pyarrow;
``from_arrow`` takes any object exporting ``__arrow_c_schema__``)."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Union

import pyarrow as pa

__all__ = ["ArrayType", "DataType", "Field", "MapType", "PrimitiveType", "Schema", "StructType", "VariantType"]

_PRIMITIVES = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


def _arro3(kind: str, value: Any) -> Any:
    """``value`` (a pyarrow type, field or schema) as the arro3 object deltalake returns."""
    try:
        import arro3.core as a3
    except ImportError:  # pragma: no cover - arro3 is a dependency of deltalake users' stacks
        return value
    return getattr(a3, kind).from_arrow(value)


def _pa_type(obj: Any) -> pa.DataType:
    if isinstance(obj, pa.DataType):
        return obj
    if isinstance(obj, pa.Field):
        return obj.type
    if hasattr(obj, "__arrow_c_schema__"):
        try:
            return pa.DataType._import_from_c_capsule(obj.__arrow_c_schema__())
        except Exception:
            return pa.field(obj).type
    raise TypeError(f"not an Arrow type: {obj!r}")


def _pa_field(obj: Any) -> pa.Field:
    if isinstance(obj, pa.Field):
        return obj
    if hasattr(obj, "__arrow_c_schema__"):
        return pa.Field._import_from_c_capsule(obj.__arrow_c_schema__())
    raise TypeError(f"not an Arrow field: {obj!r}")


class PrimitiveType:
    """A primitive type by its Delta name: ``PrimitiveType("integer")``, ``"decimal(10,2)"``."""

    def __init__(self, data_type: str) -> None:
        name = data_type.strip().lower() if isinstance(data_type, str) else data_type
        if not isinstance(name, str):
            raise TypeError("PrimitiveType takes the type's name")
        m = _DECIMAL.match(name)
        if m:
            p, s = int(m.group(1)), int(m.group(2))
            if not (1 <= p <= 38) or s > p:
                raise ValueError(f"invalid type: decimal({p},{s}) (precision 1..38, scale at most the precision)")
            name = f"decimal({p},{s})"
        elif name not in _PRIMITIVES:
            raise ValueError(f"invalid type: {data_type}")
        self.type = name

    def to_json(self) -> str:
        return json.dumps(self.type)

    @staticmethod
    def from_json(type_json: str) -> "PrimitiveType":
        v = json.loads(type_json)
        if not isinstance(v, str):
            raise ValueError(f"not a primitive type: {type_json}")
        return PrimitiveType(v)

    def _pa(self) -> pa.DataType:
        m = _DECIMAL.match(self.type)
        if m:
            return pa.decimal128(int(m.group(1)), int(m.group(2)))
        return _PRIMITIVES[self.type]

    def to_arrow(self) -> Any:
        return _arro3("DataType", self._pa())

    def to_pyarrow(self) -> pa.DataType:
        return self._pa()

    @staticmethod
    def from_arrow(data_type: Any) -> "PrimitiveType":
        t = _from_pa_type(_pa_type(data_type))
        if not isinstance(t, PrimitiveType):
            raise TypeError(f"{data_type} is not a primitive type")
        return t

    def __arrow_c_schema__(self) -> object:
        return self._pa().__arrow_c_schema__()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PrimitiveType) and other.type == self.type

    def __hash__(self) -> int:
        return hash(self.type)

    def __repr__(self) -> str:
        return f'PrimitiveType("{self.type}")'


class VariantType:
    """The variant type (semi-structured values)."""

    type = "variant"

    def to_json(self) -> str:
        return json.dumps("variant")

    @staticmethod
    def from_json(type_json: str) -> "VariantType":
        if json.loads(type_json) != "variant":
            raise ValueError(f"not a variant type: {type_json}")
        return VariantType()

    def _pa(self) -> pa.DataType:
        return pa.struct([pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)])

    def to_arrow(self) -> Any:
        return _arro3("DataType", self._pa())

    @staticmethod
    def from_arrow(data_type: Any) -> "VariantType":
        t = _pa_type(data_type)
        if not pa.types.is_struct(t) or sorted(f.name for f in t) != ["metadata", "value"]:
            raise TypeError(f"{data_type} is not a variant type")
        return VariantType()

    def __arrow_c_schema__(self) -> object:
        return self._pa().__arrow_c_schema__()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VariantType)

    def __hash__(self) -> int:
        return hash("variant")

    def __repr__(self) -> str:
        return "VariantType()"


def _coerce(t: Any) -> "DataType":
    return PrimitiveType(t) if isinstance(t, str) else t


class ArrayType:
    """An array of ``element_type`` (a type or a primitive type's name)."""

    type = "array"

    def __init__(self, element_type: "DataType", contains_null: bool = True) -> None:
        self.element_type = _coerce(element_type)
        self.contains_null = bool(contains_null)

    def _json(self) -> Dict[str, Any]:
        return {"type": "array", "elementType": _type_json(self.element_type), "containsNull": self.contains_null}

    def to_json(self) -> str:
        return json.dumps(self._json(), separators=(",", ":"))

    @staticmethod
    def from_json(type_json: str) -> "ArrayType":
        t = _type_from_json(json.loads(type_json))
        if not isinstance(t, ArrayType):
            raise ValueError(f"not an array type: {type_json}")
        return t

    def _pa(self) -> pa.DataType:
        return pa.list_(pa.field("element", _to_pa(self.element_type), nullable=self.contains_null))

    def to_arrow(self) -> Any:
        return _arro3("DataType", self._pa())

    @staticmethod
    def from_arrow(data_type: Any) -> "ArrayType":
        t = _from_pa_type(_pa_type(data_type))
        if not isinstance(t, ArrayType):
            raise TypeError(f"{data_type} is not a list type")
        return t

    def __arrow_c_schema__(self) -> object:
        return self._pa().__arrow_c_schema__()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArrayType) and other.element_type == self.element_type and other.contains_null == self.contains_null

    def __repr__(self) -> str:
        return f"ArrayType({self.element_type!r}, contains_null={self.contains_null})"


class MapType:
    """A map from ``key_type`` to ``value_type``."""

    type = "map"

    def __init__(self, key_type: "DataType", value_type: "DataType", value_contains_null: bool = True) -> None:
        self.key_type = _coerce(key_type)
        self.value_type = _coerce(value_type)
        self.value_contains_null = bool(value_contains_null)

    def _json(self) -> Dict[str, Any]:
        return {
            "type": "map",
            "keyType": _type_json(self.key_type),
            "valueType": _type_json(self.value_type),
            "valueContainsNull": self.value_contains_null,
        }

    def to_json(self) -> str:
        return json.dumps(self._json(), separators=(",", ":"))

    @staticmethod
    def from_json(type_json: str) -> "MapType":
        t = _type_from_json(json.loads(type_json))
        if not isinstance(t, MapType):
            raise ValueError(f"not a map type: {type_json}")
        return t

    def _pa(self) -> pa.DataType:
        return pa.map_(
            pa.field("key", _to_pa(self.key_type), nullable=False),
            pa.field("value", _to_pa(self.value_type), nullable=self.value_contains_null),
        )

    def to_arrow(self) -> Any:
        return _arro3("DataType", self._pa())

    @staticmethod
    def from_arrow(data_type: Any) -> "MapType":
        t = _from_pa_type(_pa_type(data_type))
        if not isinstance(t, MapType):
            raise TypeError(f"{data_type} is not a map type")
        return t

    def __arrow_c_schema__(self) -> object:
        return self._pa().__arrow_c_schema__()

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MapType)
            and other.key_type == self.key_type
            and other.value_type == self.value_type
            and other.value_contains_null == self.value_contains_null
        )

    def __repr__(self) -> str:
        return f"MapType({self.key_type!r}, {self.value_type!r}, value_contains_null={self.value_contains_null})"


class Field:
    """A named column or struct field: ``Field("id", "long", nullable=False)``."""

    def __init__(self, name: str, type: "DataType", nullable: bool = True, metadata: Optional[Dict[str, Any]] = None) -> None:
        if not isinstance(name, str):
            raise TypeError("a field's name is a string")
        self.name = name
        self.type = _coerce(type)
        self.nullable = bool(nullable)
        self.metadata: Dict[str, Any] = _metadata_values(metadata)

    def _json(self) -> Dict[str, Any]:
        return {"name": self.name, "type": _type_json(self.type), "nullable": self.nullable, "metadata": self.metadata}

    def to_json(self) -> str:
        return json.dumps(self._json(), separators=(",", ":"))

    @staticmethod
    def from_json(field_json: str) -> "Field":
        return _field_from_json(json.loads(field_json))

    def _pa(self) -> pa.Field:
        return pa.field(self.name, _to_pa(self.type), nullable=self.nullable)

    def to_arrow(self) -> Any:
        return _arro3("Field", self._pa())

    def to_pyarrow(self) -> pa.Field:
        return self._pa()

    @staticmethod
    def from_arrow(field: Any) -> "Field":
        f = _pa_field(field)
        return Field(f.name, _from_pa_type(f.type), nullable=f.nullable)

    def __arrow_c_schema__(self) -> object:
        return self._pa().__arrow_c_schema__()

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Field)
            and other.name == self.name
            and other.type == self.type
            and other.nullable == self.nullable
            and other.metadata == self.metadata
        )

    def __repr__(self) -> str:
        meta = f", metadata={self.metadata}" if self.metadata else ""
        return f"Field({self.name}, {self.type!r}, nullable={self.nullable}{meta})"


class StructType:
    """A struct of fields."""

    type = "struct"

    def __init__(self, fields: List[Field]) -> None:
        self.fields = list(fields)
        names = [f.name.lower() for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError("a struct's field names must be distinct (case-insensitively)")

    def _json(self) -> Dict[str, Any]:
        return {"type": "struct", "fields": [f._json() for f in self.fields]}

    def to_json(self) -> str:
        return json.dumps(self._json(), separators=(",", ":"))

    @staticmethod
    def from_json(type_json: str) -> "StructType":
        t = _type_from_json(json.loads(type_json))
        if not isinstance(t, StructType):
            raise ValueError(f"not a struct type: {type_json}")
        return t

    def _pa(self) -> pa.DataType:
        return pa.struct([f._pa() for f in self.fields])

    def to_arrow(self) -> Any:
        return _arro3("DataType", self._pa())

    @staticmethod
    def from_arrow(data_type: Any) -> "StructType":
        t = _from_pa_type(_pa_type(data_type))
        if not isinstance(t, StructType):
            raise TypeError(f"{data_type} is not a struct type")
        return t

    def __arrow_c_schema__(self) -> object:
        return self._pa().__arrow_c_schema__()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StructType) and not isinstance(other, Schema) and other.fields == self.fields

    def __repr__(self) -> str:
        return f"StructType([{', '.join(repr(f) for f in self.fields)}])"


class Schema:
    """A table schema: its top-level fields. ``to_arrow()`` gives the Arrow schema."""

    def __init__(self, fields: List[Field]) -> None:
        self.fields = list(fields)
        names = [f.name.lower() for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError("a schema's column names must be distinct (case-insensitively)")

    @property
    def invariants(self) -> List[tuple]:
        """(field path, SQL) of each column invariant (``delta.invariants`` field metadata)."""
        out = []

        def walk(fields: List[Field], prefix: str) -> None:
            for f in fields:
                path = f"{prefix}{f.name}"
                inv = f.metadata.get("delta.invariants")
                if inv:
                    try:
                        sql = json.loads(inv)["expression"]["expression"] if isinstance(inv, str) else inv["expression"]["expression"]
                    except (ValueError, KeyError, TypeError):
                        sql = str(inv)
                    out.append((path, sql))
                if isinstance(f.type, StructType):
                    walk(f.type.fields, path + ".")

        walk(self.fields, "")
        return out

    def _json(self) -> Dict[str, Any]:
        return {"type": "struct", "fields": [f._json() for f in self.fields]}

    def to_json(self) -> str:
        return json.dumps(self._json(), separators=(",", ":"))

    @staticmethod
    def from_json(schema_json: str) -> "Schema":
        v = json.loads(schema_json)
        if not isinstance(v, dict) or v.get("type") != "struct":
            raise ValueError(f"not a struct schema: {schema_json[:80]}")
        return Schema([_field_from_json(f) for f in v.get("fields", [])])

    def _pa(self, as_large_types: bool = False) -> pa.Schema:
        s = pa.schema([f._pa() for f in self.fields])
        if as_large_types:
            s = pa.schema([pa.field(f.name, _large(f.type), f.nullable) for f in s])
        return s

    def to_arrow(self, as_large_types: bool = False) -> Any:
        return _arro3("Schema", self._pa(as_large_types))

    def to_pyarrow(self, as_large_types: bool = False) -> pa.Schema:
        return self._pa(as_large_types)

    @staticmethod
    def from_arrow(data_type: Any) -> "Schema":
        s = data_type if isinstance(data_type, pa.Schema) else pa.schema(data_type)
        return Schema([Field(f.name, _from_pa_type(f.type), nullable=f.nullable) for f in s])

    def __arrow_c_schema__(self) -> object:
        return self._pa().__arrow_c_schema__()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Schema):
            return other.fields == self.fields
        if isinstance(other, pa.Schema):
            return self._pa() == other
        return NotImplemented

    def __repr__(self) -> str:
        return f"Schema([{', '.join(repr(f) for f in self.fields)}])"


DataType = Union[PrimitiveType, MapType, StructType, ArrayType, VariantType]


def _type_json(t: Any) -> Any:
    if isinstance(t, (PrimitiveType, VariantType)):
        return t.type
    if isinstance(t, (ArrayType, MapType, StructType)):
        return t._json()
    raise TypeError(f"not a Delta type: {t!r}")


def _type_from_json(v: Any) -> Any:
    if isinstance(v, str):
        return VariantType() if v == "variant" else PrimitiveType(v)
    if isinstance(v, dict):
        kind = v.get("type")
        if kind == "array":
            return ArrayType(_type_from_json(v["elementType"]), contains_null=v.get("containsNull", True))
        if kind == "map":
            return MapType(_type_from_json(v["keyType"]), _type_from_json(v["valueType"]), value_contains_null=v.get("valueContainsNull", True))
        if kind == "struct":
            return StructType([_field_from_json(f) for f in v.get("fields", [])])
    raise ValueError(f"not a Delta type: {v!r}")


def _field_from_json(v: Dict[str, Any]) -> Field:
    f = Field(v["name"], _type_from_json(v["type"]), nullable=v.get("nullable", True))
    f.metadata = dict(v.get("metadata") or {})  # as the log holds it (numbers, booleans, objects)
    return f


def _metadata_values(metadata: Any) -> Dict[str, Any]:
    """Field metadata as deltalake's ``Field(...)`` keeps it: it must be JSON (a TypeError
    otherwise); a string and an integer that fits 64 bits stay as they are, and any other
    value (an object, a list, a float, a boolean, null) is kept as its compact JSON text."""
    if metadata is None:
        return {}
    parsed = json.loads(json.dumps(metadata))
    if parsed is None:
        return {}
    if not isinstance(parsed, dict):
        raise ValueError(f"a field's metadata is a JSON object, got {metadata!r}")
    out: Dict[str, Any] = {}
    for k, v in parsed.items():
        if isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63):
            out[k] = v
        else:
            out[k] = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    return out


def _to_pa(t: Any) -> pa.DataType:
    return t._pa()


def _large(t: pa.DataType) -> pa.DataType:
    if pa.types.is_string(t):
        return pa.large_string()
    if pa.types.is_binary(t):
        return pa.large_binary()
    if pa.types.is_list(t):
        return pa.large_list(pa.field(t.value_field.name, _large(t.value_type), t.value_field.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _large(f.type), f.nullable) for f in t])
    if pa.types.is_map(t):
        key = pa.field(t.key_field.name, _large(t.key_type), t.key_field.nullable)
        item = pa.field(t.item_field.name, _large(t.item_type), t.item_field.nullable)
        return pa.map_(key, item, t.keys_sorted)
    return t


def _from_pa_type(t: pa.DataType) -> Any:
    """The Delta type of an Arrow type, as deltalake maps them (unsigned integers widen)."""
    simple = [
        (pa.types.is_int8, "byte"),
        (pa.types.is_uint8, "short"),
        (pa.types.is_int16, "short"),
        (pa.types.is_uint16, "integer"),
        (pa.types.is_int32, "integer"),
        (pa.types.is_uint32, "long"),
        (pa.types.is_int64, "long"),
        (pa.types.is_uint64, "long"),
        (pa.types.is_float32, "float"),
        (pa.types.is_float64, "double"),
        (pa.types.is_boolean, "boolean"),
        (pa.types.is_date32, "date"),
        (pa.types.is_date64, "date"),
    ]
    for pred, name in simple:
        if pred(t):
            return PrimitiveType(name)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        return PrimitiveType("string")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or getattr(pa.types, "is_binary_view", lambda _: False)(t):
        return PrimitiveType("binary")
    if pa.types.is_timestamp(t):
        return PrimitiveType("timestamp" if t.tz else "timestamp_ntz")
    if pa.types.is_decimal(t):
        return PrimitiveType(f"decimal({t.precision},{t.scale})")
    if pa.types.is_map(t):
        return MapType(_from_pa_type(t.key_type), _from_pa_type(t.item_type), value_contains_null=t.item_field.nullable)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) or getattr(pa.types, "is_list_view", lambda _: False)(t):
        return ArrayType(_from_pa_type(t.value_type), contains_null=t.value_field.nullable)
    if pa.types.is_struct(t):
        return StructType([Field(f.name, _from_pa_type(f.type), nullable=f.nullable) for f in t])
    if pa.types.is_dictionary(t):
        return _from_pa_type(t.value_type)
    raise TypeError(f"no Delta type for Arrow type {t}")
