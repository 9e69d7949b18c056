"""The four allow-lists whose contract exists only as a JSON Schema (claim, moment, audience,
area; SPEC §4.1), proved against those schemas with an independent judge, `jsonschema`.

Not named test_*.py on purpose: it needs the third-party `jsonschema` package, so it runs
only in the test virtual environment (from the checkout):

    .venv/bin/python tests/_unit.py venv_allow_test

For each schema (`$MAJORDOMUS_REFERENCE/reference/later/schemas/<name>.schema.json`; skipped
by name where it is absent) the test walks the
schema and builds documents: one minimal valid document per shape a property may take (every
optional property, every list empty where the schema lets it be and full, every item shape),
and, at every object level and every value, a document the schema forbids (a foreign key, a
list where a scalar belongs, a mapping where a list belongs, an empty list the schema does not
allow). `jsonschema` must accept the first kind and reject the second; the shipped list must
allow every key path (§3.4, `majordomus.key_paths`) of the first and refuse the offending path
of the second; and every pattern of the list must be needed by some valid document. The claim
schema describes one member: each item is judged against it, and the whole file
(`version: 1`, `claims: [...]`, §5.1) against the list. The checks also run on broken copies
of each list, which they must reject (so that they can fail).
"""
import copy
import json
import os
import re
import sys
import unittest

import jsonschema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402  (puts the checkout root on sys.path)
import majordomus  # noqa: E402

SCHEMAS = support.reference("reference", "later", "schemas")
SHIPPED = os.path.join(support.ROOT, "share", "allow")
MARKDOWN = ("moment", "audience", "area")
FOREIGN = "zz_foreign"

# Keywords the walk below reads; a schema using any other one fails the test, so that a
# construct nobody taught the walk (patternProperties, $ref, oneOf, ...) cannot pass unseen.
ANNOTATIONS = {"$schema", "$id", "$comment", "title", "description", "examples", "default"}
READ = {"type", "properties", "additionalProperties", "required", "items", "minItems",
        "const", "enum", "pattern", "minLength", "minimum"}
SCALARS = {"string", "integer", "boolean", "number"}
CANDIDATES = ("a", "a.b", "ab-c", "Some text.", 0, 1, 7, True, False)


def read(path):
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8")


def load_schema(name):
    with open(os.path.join(SCHEMAS, name + ".schema.json"), encoding="utf-8") as handle:
        return json.load(handle)


def file_schema(item):
    """A claims file as §5.1 and the kind read it: `version` ∈ [1], `claims` a list of items
    (each one the claim schema). The test's own statement; the later era has none."""
    item = {k: v for k, v in item.items() if k not in ("$schema", "$id")}
    return {"type": "object", "additionalProperties": False, "required": ["version", "claims"],
            "properties": {"version": {"const": 1}, "claims": {"type": "array", "items": item}}}


def shape(schema, where):
    """'object', 'array' or 'scalar'; an unread keyword or shape fails loudly."""
    if not isinstance(schema, dict):
        raise AssertionError("%s: a schema that is not an object" % where)
    unread = set(schema) - ANNOTATIONS - READ
    if unread:
        raise AssertionError("%s: keyword(s) this test does not read: %s" % (where, sorted(unread)))
    kind = schema.get("type")
    if not isinstance(kind, (str, type(None))):
        raise AssertionError("%s: a type that is not one name: %r" % (where, kind))
    if kind == "object":
        if schema.get("additionalProperties") is not False:
            raise AssertionError("%s: an object open to other keys" % where)
        return "object"
    if kind == "array":
        if not isinstance(schema.get("items"), dict):
            raise AssertionError("%s: an array without one items schema" % where)
        return "array"
    if kind in SCALARS or (kind is None and ("const" in schema or "enum" in schema)):
        values = [schema["const"]] if "const" in schema else schema.get("enum", [])
        if any(isinstance(v, (dict, list)) for v in values):
            raise AssertionError("%s: a const or enum holding a structure" % where)
        return "scalar"
    raise AssertionError("%s: a schema of no shape this test reads" % where)


def validator(schema):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def scalar(schema, where):
    """A value the (scalar) schema accepts, chosen by the judge itself."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    judge = validator(schema)
    for value in CANDIDATES:
        if judge.is_valid(value):
            return value
    raise AssertionError("%s: no candidate value is valid" % where)


def variants(schema, where):
    """Valid values of `schema`, together covering every key path it permits; the first is
    the minimal one."""
    kind = shape(schema, where)
    if kind == "scalar":
        return [scalar(schema, where)]
    if kind == "array":
        items = variants(schema["items"], where + "/items")
        least = max(schema.get("minItems", 0), 1)
        found = [[] for _ in range(1) if not schema.get("minItems")]
        found += [[item] * least for item in items]
        found.append([items[0]] * 12)              # two-digit indices
        return found
    base = {}
    for name in schema.get("required", []):
        base[name] = variants(schema["properties"][name], where + "/" + name)[0]
    found = [base]
    for name, sub in schema.get("properties", {}).items():
        for value in variants(sub, where + "/" + name):
            document = dict(base)
            document[name] = value
            found.append(document)
    return found


def join(path, key):
    return "%s.%s" % (path, key) if path else str(key)


def negatives(schema, value, path, rebuild, where, out):
    """(document, offending key path, what) the schema forbids, at and under `path`."""
    kind = shape(schema, where)
    if kind == "object":
        out.append((rebuild(dict(value, **{FOREIGN: "a"})), join(path, FOREIGN), "foreign key"))
        if path and schema.get("required"):
            out.append((rebuild({}), path, "empty mapping where keys are required"))
            out.append((rebuild("a"), path, "scalar where a mapping belongs"))
        for name, sub in schema.get("properties", {}).items():
            current = value[name] if name in value else variants(sub, where + "/" + name)[0]

            def put(new, name=name):
                changed = dict(value)
                changed[name] = new
                return rebuild(changed)
            negatives(sub, current, join(path, name), put, where + "/" + name, out)
    elif kind == "array":
        item = value[0] if value else variants(schema["items"], where + "/items")[0]
        if schema.get("minItems"):
            out.append((rebuild([]), path, "empty list the schema does not allow"))
        out.append((rebuild({FOREIGN: "a"}), join(path, FOREIGN), "mapping where a list belongs"))
        negatives(schema["items"], item, join(path, 0), lambda new: rebuild([new]),
                  where + "/items", out)
    else:
        out.append((rebuild([value]), join(path, 0), "list where a scalar belongs"))
        out.append((rebuild({FOREIGN: value}), join(path, FOREIGN),
                    "mapping where a scalar belongs"))
    return out


def allow_from(text):
    return majordomus.AllowList.from_text("under-test", text)


def pattern_lines(text):
    return [line for line in text.split("\n") if line.strip() and not line.startswith("#")]


class Case(object):
    """One derived list and the documents that judge it."""

    def __init__(self, name):
        self.name = name
        schema = load_schema(name)
        validator(schema)                         # the reference schema itself is valid
        if name == "claim":
            self.item_judge = validator(schema)
            whole = file_schema(schema)
        else:
            self.item_judge = None
            whole = schema
        self.judge = validator(whole)
        self.valid = variants(whole, name)
        self.invalid = negatives(whole, self.valid[0], "", lambda document: document, name, [])

    def problems(self, text):
        """Every way the list `text` disagrees with the schema; [] when it is right."""
        allow, found, permitted = allow_from(text), [], set()
        for document in self.valid:
            errors = [e.message for e in self.judge.iter_errors(document)]
            if errors:
                found.append("the judge refuses a document built as valid: %s: %s"
                             % (json.dumps(document), errors))
            if self.item_judge is not None:
                for item in document["claims"]:
                    if not self.item_judge.is_valid(item):
                        found.append("the claim schema refuses item %s" % json.dumps(item))
            paths = majordomus.key_paths(document)
            permitted.update(paths)
            refused = allow.unknown(paths)
            if refused:
                found.append("valid document %s: paths refused: %s"
                             % (json.dumps(document), refused))
        for document, path, what in self.invalid:
            if self.judge.is_valid(document):
                found.append("the judge accepts %s (%s at %s)" % (json.dumps(document), what, path))
            if path not in majordomus.key_paths(document):
                found.append("test bug: %s is not a key path of %s" % (path, json.dumps(document)))
            if path in permitted:
                found.append("test bug: %s (%s) is also a path of a valid document" % (path, what))
            if allow.allows(path):
                found.append("%s at %s: the list allows %s" % (what, path, path))
        for pattern in pattern_lines(text):
            if not any(re.fullmatch(pattern, path) for path in permitted):
                found.append("pattern %s allows no path of any valid document" % pattern)
        return found


class DerivedAllowListsTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.missing = support.reference_missing("reference", "later", "schemas")
        if not cls.missing:
            cls.cases = {name: Case(name) for name in ("claim",) + MARKDOWN}

    def setUp(self):
        if self.missing:      # each test skipped by name, where the schemas are absent
            raise unittest.SkipTest(self.missing)

    def shipped(self, name):
        return read(os.path.join(SHIPPED, name + ".txt"))

    def test_documents_cover_the_schema(self):
        for name, case in self.cases.items():
            with self.subTest(list=name):
                self.assertGreater(len(case.valid), 10)
                self.assertGreater(len(case.invalid), 10)
                # every property of the schema appears in some valid document
                schema = load_schema(name)
                keys = set()
                for document in case.valid:
                    for path in majordomus.key_paths(document):
                        keys.update(path.split("."))
                self.assertLessEqual(set(schema["properties"]), keys)

    def test_each_list_agrees_with_its_schema(self):
        for name, case in self.cases.items():
            with self.subTest(list=name):
                self.assertEqual(case.problems(self.shipped(name)), [])

    def test_the_claim_list_is_written_over_the_whole_file(self):
        allow = allow_from(self.shipped("claim"))
        self.assertEqual(allow.unknown(["version", "claims", "claims.0.id", "claims.3.note"]), [])
        self.assertEqual(allow.unknown(["id", "claim", "note", "claims.0", "claims.0.zz"]),
                         ["id", "claim", "note", "claims.0", "claims.0.zz"])

    def test_a_missing_pattern_is_caught(self):
        for name, case in self.cases.items():
            text = self.shipped(name)
            for line in pattern_lines(text):
                broken = "\n".join(l for l in text.split("\n") if l != line) + "\n"
                with self.subTest(list=name, without=line):
                    self.assertTrue(any("paths refused" in p for p in case.problems(broken)))

    def test_a_widened_pattern_is_caught(self):
        for name, case in self.cases.items():
            text = self.shipped(name)
            for line in pattern_lines(text):
                broken = text.replace(line + "\n", line[:-1] + "(\\..*)?$\n")
                with self.subTest(list=name, widened=line):
                    self.assertTrue(any("the list allows" in p for p in case.problems(broken)))

    def test_an_extra_pattern_is_caught(self):
        for name, case in self.cases.items():
            text = self.shipped(name)
            for extra, says in (("^%s$" % FOREIGN, "the list allows %s" % FOREIGN),
                                ("^.*$", "the list allows"), ("^colour$", "allows no path")):
                with self.subTest(list=name, extra=extra):
                    self.assertTrue(any(says in p for p in case.problems(text + extra + "\n")))

    def test_the_walk_refuses_what_it_does_not_read(self):
        base = load_schema("area")
        for number, change in enumerate((lambda s: s.pop("additionalProperties"),
                       lambda s: s.__setitem__("patternProperties", {"^x-": {}}),
                       lambda s: s["properties"].__setitem__("x", {"$ref": "#/$defs/x"}),
                       lambda s: s["properties"].__setitem__("x", {"oneOf": [{"type": "string"}]}),
                       lambda s: s["properties"].__setitem__("x", {"type": ["string", "integer"]}),
                       lambda s: s["properties"]["tags"].__setitem__("prefixItems", []))):
            schema = copy.deepcopy(base)
            change(schema)
            with self.subTest(change=number):
                with self.assertRaises(AssertionError):
                    variants(schema, "area")


if __name__ == "__main__":
    unittest.main()
