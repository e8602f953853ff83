#!/usr/bin/env python3
"""The Elle, Knossos and elle-cli conformance cases, derived from the upstream repositories' own tests.

Reads `../shared/upstream/` beside the repository checkout (found from this script's own location; `--upstream`
overrides it) and derives every case's expectation from the upstream's own test:

* Elle (`elle/test/elle/list_append_test.clj`, `rw_register_test.clj`): every assertion a test makes about Elle's
  checker (`c`, `cf`, `check`) on an inline history: `:valid?`, `:anomaly-types`, `:not`, with the options the test
  passed. The inline histories are Clojure code (`(op "ax1ay1")`, `pair`, `h/history`, `for` ...); a small evaluator
  of that Clojure subset transcribes each into an EDN history, written under `--histories DIR`, never into the
  repository (they are derived from EPL-licensed code). A test reading one of Elle's own `histories/` files (`cf`) is
  a case on that file, referenced where it is.
* Knossos (`knossos/data/`): every history as it is; good/ is valid and bad/ invalid (Knossos's `test-examples`), and
  the failing op's index where `linear_test.clj` or `wgl_test.clj` names it.
* elle-cli (`elle-cli/test.sh`): every `run_test` line: its model, its options, and its expected exit code (0 valid,
  1 invalid).

Output: `--table FILE` writes the table (tab-separated; the header the test reads). Its `faultline` and `reason`
columns are faultline's, kept by hand: they are carried over from FILE's current contents (or `--keep FILE`) for every
row whose file, model and options are unchanged, and a new row starts as `=` (faultline agrees). Without `--table`,
the table goes to stdout. `--histories DIR` writes the transcribed Elle histories under DIR (as the table's
`elle/tests/...` paths name them). What was not made a case, and why, goes to stderr with `--verbose`.

Python 3 standard library only.
"""

import argparse
import fractions
import json
import os
import re
import sys

HEADER = [
    "file",
    "model",
    "options",
    "expected_verdict",
    "expected_anomalies",
    "expected_not",
    "expected_op",
    "faultline",
    "reason",
]

HERE = os.path.dirname(os.path.abspath(__file__))
# workloads/tests/conformance -> the repository root -> its parent, where shared/ sits.
DEFAULT_UPSTREAM = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "shared", "upstream"))


class Unsupported(Exception):
    """A form the evaluator does not model (a simulator, a graph analyzer, file I/O ...)."""


# ---------------------------------------------------------------------------------------------------------------
# Reading Clojure source and EDN.


class Kw:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Kw) and other.name == self.name

    def __hash__(self):
        return hash(("kw", self.name))

    def __repr__(self):
        return ":" + self.name


class Sym:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return isinstance(other, Sym) and other.name == self.name

    def __hash__(self):
        return hash(("sym", self.name))

    def __repr__(self):
        return self.name


class Char(str):
    """A character literal (`\\a`)."""


class Form(tuple):
    """A list form `( ... )` as read: code."""


class Vec(tuple):
    """A vector, read or built."""


class MapForm(tuple):
    """A map literal as read: its key and value forms, in order."""


class SetForm(tuple):
    """A set literal as read."""


class CMap(dict):
    """An evaluated map."""

    def __hash__(self):
        return hash(frozenset((k, _hashable(v)) for k, v in self.items()))


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    return v


DELIMS = set("()[]{}\"; \t\r\n,")
NAMED_CHARS = {"newline": "\n", "space": " ", "tab": "\t", "return": "\r", "backspace": "\b", "formfeed": "\f"}


class Reader:
    def __init__(self, text, where):
        self.text = text
        self.i = 0
        self.where = where

    def error(self, message):
        line = self.text.count("\n", 0, self.i) + 1
        raise SyntaxError(f"{self.where}:{line}: {message}")

    def skip(self):
        t = self.text
        while self.i < len(t):
            c = t[self.i]
            if c in " \t\r\n,":
                self.i += 1
            elif c == ";":
                while self.i < len(t) and t[self.i] != "\n":
                    self.i += 1
            else:
                break

    def read_all(self):
        forms = []
        while True:
            self.skip()
            if self.i >= len(self.text):
                return forms
            form = self.read()
            if form is not _DISCARD:
                forms.append(form)

    def read_seq(self, close):
        items = []
        while True:
            self.skip()
            if self.i >= len(self.text):
                self.error(f"unclosed {close!r}")
            if self.text[self.i] == close:
                self.i += 1
                return items
            item = self.read()
            if item is not _DISCARD:
                items.append(item)

    def token(self):
        start = self.i
        while self.i < len(self.text) and self.text[self.i] not in DELIMS:
            self.i += 1
        return self.text[start : self.i]

    def read(self):
        self.skip()
        t = self.text
        c = t[self.i]
        if c == "(":
            self.i += 1
            return Form(self.read_seq(")"))
        if c == "[":
            self.i += 1
            return Vec(self.read_seq("]"))
        if c == "{":
            self.i += 1
            items = self.read_seq("}")
            if len(items) % 2:
                self.error("a map literal with an odd number of forms")
            return MapForm(zip(items[0::2], items[1::2]))
        if c in ")]}":
            self.error(f"unexpected {c!r}")
        if c == '"':
            return self.read_string()
        if c == "'":
            self.i += 1
            return Form((Sym("quote"), self.read()))
        if c == "`":
            self.i += 1
            return Form((Sym("syntax-quote"), self.read()))
        if c == "~":
            self.i += 1
            if t.startswith("@", self.i):
                self.i += 1
                return Form((Sym("unquote-splicing"), self.read()))
            return Form((Sym("unquote"), self.read()))
        if c == "@":
            self.i += 1
            return Form((Sym("deref"), self.read()))
        if c == "^":
            self.i += 1
            self.read()  # metadata
            return self.read()
        if c == "\\":
            self.i += 1
            start = self.i
            self.i += 1
            while self.i < len(t) and t[self.i] not in DELIMS:
                self.i += 1
            name = t[start : self.i]
            if len(name) > 1 and name in NAMED_CHARS:
                return Char(NAMED_CHARS[name])
            if len(name) > 1 and name[0] == "u":
                return Char(chr(int(name[1:], 16)))
            self.i = start + 1
            return Char(name[0])
        if c == "#":
            nxt = t[self.i + 1] if self.i + 1 < len(t) else ""
            if nxt == "{":
                self.i += 2
                return SetForm(self.read_seq("}"))
            if nxt == "_":
                self.i += 2
                self.read()
                return _DISCARD
            if nxt == '"':
                self.i += 1
                return Form((Sym("re-pattern"), self.read_string()))
            if nxt == "(":
                self.i += 2
                return anonymous_fn(Form(self.read_seq(")")))
            if nxt == "'":
                self.i += 2
                return Form((Sym("var"), self.read()))
            if nxt == "?":
                self.error("reader conditionals are not supported")
            # A tagged literal: the tag, then its form.
            self.i += 1
            tag = self.token()
            return Form((Sym("tagged"), Sym(tag), self.read()))
        return self.atom(self.token())

    def read_string(self):
        t = self.text
        self.i += 1
        out = []
        while True:
            if self.i >= len(t):
                self.error("unclosed string")
            c = t[self.i]
            if c == '"':
                self.i += 1
                return "".join(out)
            if c == "\\":
                e = t[self.i + 1]
                self.i += 2
                if e == "u":
                    out.append(chr(int(t[self.i : self.i + 4], 16)))
                    self.i += 4
                else:
                    out.append({"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "b": "\b", "f": "\f"}.get(e, e))
            else:
                out.append(c)
                self.i += 1

    def atom(self, tok):
        if not tok:
            self.error(f"unexpected {self.text[self.i]!r}")
        if tok == "nil":
            return None
        if tok == "true":
            return True
        if tok == "false":
            return False
        if tok.startswith(":"):
            return Kw(tok.lstrip(":"))
        if re.fullmatch(r"[+-]?\d+[NM]?", tok):
            return int(tok.rstrip("NM"))
        if re.fullmatch(r"[+-]?\d+/\d+", tok):
            return fractions.Fraction(tok)
        if re.fullmatch(r"[+-]?(\d+\.\d*|\d*\.\d+|\d+)([eE][+-]?\d+)?M?", tok):
            return float(tok.rstrip("M"))
        return Sym(tok)


_DISCARD = object()


def anonymous_fn(body):
    """`#(f % %2)` as `(fn [%1 %2] (f %1 %2))`."""
    highest = [0]
    rest = [False]

    def walk(x):
        if isinstance(x, Sym):
            if x.name == "%":
                highest[0] = max(highest[0], 1)
                return Sym("%1")
            m = re.fullmatch(r"%(\d+)", x.name)
            if m:
                highest[0] = max(highest[0], int(m.group(1)))
            if x.name == "%&":
                rest[0] = True
            return x
        if isinstance(x, Form):
            return Form(walk(y) for y in x)
        if isinstance(x, Vec):
            return Vec(walk(y) for y in x)
        if isinstance(x, MapForm):
            return MapForm((walk(k), walk(v)) for k, v in x)
        if isinstance(x, SetForm):
            return SetForm(walk(y) for y in x)
        return x

    body = walk(body)
    params = [Sym(f"%{i}") for i in range(1, highest[0] + 1)]
    if rest[0]:
        params += [Sym("&"), Sym("%&")]
    return Form((Sym("fn"), Vec(params), body))


def read_file(path, where):
    with open(path, encoding="utf-8") as f:
        return Reader(f.read(), where).read_all()


# ---------------------------------------------------------------------------------------------------------------
# Writing EDN.


def edn(x):
    if x is None:
        return "nil"
    if x is True:
        return "true"
    if x is False:
        return "false"
    if isinstance(x, Kw):
        return ":" + x.name
    if isinstance(x, Char):
        return "\\" + x
    if isinstance(x, str):
        return json.dumps(x, ensure_ascii=False)
    if isinstance(x, int):
        return str(x)
    if isinstance(x, fractions.Fraction):
        return f"{x.numerator}/{x.denominator}"
    if isinstance(x, float):
        return repr(x)
    if isinstance(x, dict):
        return "{" + ", ".join(f"{edn(k)} {edn(v)}" for k, v in x.items()) + "}"
    if isinstance(x, (frozenset, set)):
        return "#{" + " ".join(sorted(edn(v) for v in x)) + "}"
    if isinstance(x, History):
        return edn(x.ops)
    if isinstance(x, (list, tuple)):
        return "[" + " ".join(edn(v) for v in x) + "]"
    raise Unsupported(f"cannot write {x!r} as EDN")


# ---------------------------------------------------------------------------------------------------------------
# Evaluating the Clojure subset Elle's tests build histories with.


class History:
    """`jepsen.history/history`: ops with an `:index` each (their position unless they carry one)."""

    def __init__(self, ops):
        self.ops = []
        for position, op in enumerate(ops):
            if not isinstance(op, dict):
                raise Unsupported(f"a history of {type(op).__name__}s")
            op = CMap(op)
            if op.get(Kw("index")) is None:
                op[Kw("index")] = position
            self.ops.append(op)

    def __iter__(self):
        return iter(self.ops)

    def __len__(self):
        return len(self.ops)

    def __call__(self, index):
        for op in self.ops:
            if op.get(Kw("index")) == index:
                return op
        raise Unsupported(f"no op with index {index}")


class FileRef:
    """`(read-history "histories/x.edn")`: one of Elle's own history files."""

    def __init__(self, path):
        self.path = path


class Chk:
    """One call of Elle's checker in a test, and what the test asserts of its result."""

    def __init__(self, opts, history, where):
        self.opts = opts
        self.history = history
        self.where = where
        self.expect = {}
        # Compared with a whole result map: what the map leaves out, Elle's result does not have.
        self.full = False


class Proj:
    """`(select-keys (c ...) [...])`."""

    def __init__(self, chk, keys):
        self.chk = chk
        self.keys = keys


class FieldRef:
    """`(:valid? r)` of a checker result."""

    def __init__(self, chk, field):
        self.chk = chk
        self.field = field


class Opaque:
    """Something derived from a checker result that no case records (`(-> r :anomalies :G2 first)`)."""


OPAQUE = Opaque()


class Fn:
    def __init__(self, params, body, env, name=None):
        self.params = params
        self.body = body
        self.env = env
        self.name = name

    def __call__(self, *args):
        env = Env(self.env)
        names = list(self.params)
        if Sym("&") in names:
            at = names.index(Sym("&"))
            fixed, rest = names[:at], names[at + 1]
            if len(args) < len(fixed):
                raise Unsupported(f"arity of {self.name or 'fn'}")
            for p, a in zip(fixed, args):
                destructure(env, p, a)
            destructure(env, rest, list(args[len(fixed) :]) or None)
        else:
            if len(args) != len(names):
                raise Unsupported(f"arity of {self.name or 'fn'}")
            for p, a in zip(names, args):
                destructure(env, p, a)
        result = None
        for form in self.body:
            result = evaluate(form, env)
        return result


class MultiFn:
    """A `defn` with several arities."""

    def __init__(self, arities, name):
        self.arities = arities
        self.name = name

    def __call__(self, *args):
        for fn in self.arities:
            names = list(fn.params)
            if Sym("&") in names and len(args) >= names.index(Sym("&")):
                return fn(*args)
            if len(names) == len(args):
                return fn(*args)
        raise Unsupported(f"arity of {self.name}")


class Env:
    def __init__(self, parent=None):
        self.vars = {}
        self.parent = parent

    def lookup(self, name):
        env = self
        while env is not None:
            if name in env.vars:
                value = env.vars[name]
                if isinstance(value, Unsupported):
                    raise value
                return value
            env = env.parent
        raise Unsupported(f"`{name}`")

    def set(self, name, value):
        self.vars[name] = value


def destructure(env, pattern, value):
    if isinstance(pattern, Sym):
        env.set(pattern.name, value)
        return
    if isinstance(pattern, Vec):
        if isinstance(value, (Chk, Proj, FieldRef, Opaque)):
            raise Unsupported("destructuring a checker result")
        items = list(value) if value is not None else []
        names = list(pattern)
        i = 0
        position = 0
        while i < len(names):
            p = names[i]
            if p == Kw("as"):
                destructure(env, names[i + 1], value)
                i += 2
                continue
            if p == Sym("&"):
                destructure(env, names[i + 1], items[position:] or None)
                i += 2
                continue
            destructure(env, p, items[position] if position < len(items) else None)
            position += 1
            i += 1
        return
    raise Unsupported(f"destructuring with {pattern!r}")


def truthy(x):
    return x is not None and x is not False


def kw_get(kw, target, default=None):
    if isinstance(target, Chk):
        return FieldRef(target, kw.name)
    if isinstance(target, (Proj, FieldRef, Opaque)):
        return OPAQUE
    if isinstance(target, dict):
        return target.get(kw, default)
    if target is None:
        return default
    raise Unsupported(f"({kw!r} {type(target).__name__})")


def call(f, args):
    if isinstance(f, Kw):
        return kw_get(f, *args)
    if any(isinstance(a, (Chk, Proj, FieldRef, Opaque)) for a in args) and f not in CHK_AWARE:
        return OPAQUE
    if isinstance(f, dict):
        return f.get(args[0], args[1] if len(args) > 1 else None)
    if callable(f):
        return f(*args)
    raise Unsupported(f"calling {f!r}")


def thread(forms, last):
    x = forms[0]
    for step in forms[1:]:
        if isinstance(step, Form):
            head, rest = step[0], list(step[1:])
            x = Form([head] + rest + [x]) if last else Form([head, x] + rest)
        else:
            x = Form([step, x])
    return x


def evaluate(x, env):
    if isinstance(x, Sym):
        return env.lookup(x.name)
    if isinstance(x, Vec):
        return Vec(evaluate(v, env) for v in x)
    if isinstance(x, MapForm):
        out = CMap()
        for k, v in x:
            try:
                out[evaluate(k, env)] = evaluate(v, env)
            except Unsupported as e:
                # A part of an expected result no case compares (an explanation, a cycle's ops ...).
                out[evaluate(k, env)] = e
        return out
    if isinstance(x, SetForm):
        return frozenset(evaluate(v, env) for v in x)
    if not isinstance(x, Form):
        return x
    if not x:
        return Vec()
    head = x[0]
    if isinstance(head, Sym) and head.name in SPECIAL:
        return SPECIAL[head.name](x, env)
    f = evaluate(head, env)
    args = [evaluate(a, env) for a in x[1:]]
    return call(f, args)


def sf_quote(x, env):
    return quoted(x[1])


def quoted(x):
    if isinstance(x, Form):
        return Vec(quoted(v) for v in x)
    if isinstance(x, Vec):
        return Vec(quoted(v) for v in x)
    if isinstance(x, MapForm):
        return CMap((quoted(k), quoted(v)) for k, v in x)
    if isinstance(x, SetForm):
        return frozenset(quoted(v) for v in x)
    return x


def sf_let(x, env):
    inner = Env(env)
    bindings = list(x[1])
    for pattern, form in zip(bindings[0::2], bindings[1::2]):
        try:
            value = evaluate(form, inner)
        except Unsupported as e:
            # Bound to the reason: an error only if used.
            for name in names_in(pattern):
                inner.set(name, e)
            continue
        destructure(inner, pattern, value)
    result = None
    for form in x[2:]:
        result = evaluate(form, inner)
    return result


def names_in(pattern):
    if isinstance(pattern, Sym):
        return [pattern.name] if pattern.name != "&" else []
    if isinstance(pattern, Vec):
        return [n for p in pattern if not isinstance(p, Kw) for n in names_in(p)]
    return []


def sf_fn(x, env):
    rest = list(x[1:])
    name = None
    if rest and isinstance(rest[0], Sym):
        name = rest.pop(0).name
    if rest and isinstance(rest[0], Vec):
        fn = Fn(rest[0], rest[1:], env, name)
    else:
        fn = MultiFn([Fn(arity[0], arity[1:], env, name) for arity in rest], name)
    if name:
        inner = Env(env)
        inner.set(name, fn)
        for f in fn.arities if isinstance(fn, MultiFn) else [fn]:
            f.env = inner
    return fn


def sf_if(x, env):
    if truthy(evaluate(x[1], env)):
        return evaluate(x[2], env)
    return evaluate(x[3], env) if len(x) > 3 else None


def sf_when(x, env):
    if truthy(evaluate(x[1], env)):
        result = None
        for form in x[2:]:
            result = evaluate(form, env)
        return result
    return None


def sf_cond(x, env):
    clauses = list(x[1:])
    for test, form in zip(clauses[0::2], clauses[1::2]):
        if test == Kw("else") or truthy(evaluate(test, env)):
            return evaluate(form, env)
    return None


def sf_condp(x, env):
    pred = evaluate(x[1], env)
    value = evaluate(x[2], env)
    clauses = list(x[3:])
    while len(clauses) >= 2:
        test, form = clauses[0], clauses[1]
        clauses = clauses[2:]
        if truthy(call(pred, [evaluate(test, env), value])):
            return evaluate(form, env)
    if clauses:
        return evaluate(clauses[0], env)
    raise Unsupported("condp without a match")


def sf_for(x, env):
    bindings = list(x[1])
    body = x[2]
    out = []

    def loop(i, env):
        if i >= len(bindings):
            out.append(evaluate(body, env))
            return
        pattern, form = bindings[i], bindings[i + 1]
        if pattern == Kw("let"):
            inner = Env(env)
            pairs = list(form)
            for p, f in zip(pairs[0::2], pairs[1::2]):
                destructure(inner, p, evaluate(f, inner))
            loop(i + 2, inner)
        elif pattern == Kw("when"):
            if truthy(evaluate(form, env)):
                loop(i + 2, env)
        else:
            for item in evaluate(form, env) or []:
                inner = Env(env)
                destructure(inner, pattern, item)
                loop(i + 2, inner)

    loop(0, env)
    return Vec(out)


def sf_and(x, env):
    result = True
    for form in x[1:]:
        result = evaluate(form, env)
        if not truthy(result):
            return result
    return result


def sf_or(x, env):
    result = None
    for form in x[1:]:
        result = evaluate(form, env)
        if truthy(result):
            return result
    return result


def sf_do(x, env):
    result = None
    for form in x[1:]:
        result = evaluate(form, env)
    return result


def unsupported_form(name):
    def sf(x, env):
        raise Unsupported(f"`{name}`")

    return sf


SPECIAL = {
    "quote": sf_quote,
    "let": sf_let,
    "fn": sf_fn,
    "if": sf_if,
    "when": sf_when,
    "cond": sf_cond,
    "condp": sf_condp,
    "for": sf_for,
    "and": sf_and,
    "or": sf_or,
    "do": sf_do,
    "->": lambda x, env: evaluate(thread(list(x[1:]), False), env),
    "->>": lambda x, env: evaluate(thread(list(x[1:]), True), env),
}
for _name in ["loop", "loopr", "try", "try+", "time", "dotimes", "doseq", "binding", "with-open", "letfn", "case"]:
    SPECIAL[_name] = unsupported_form(_name)


# Builtins. Each takes evaluated arguments.


def seq(x):
    if x is None:
        return []
    if isinstance(x, dict):
        return [Vec(kv) for kv in x.items()]
    return list(x)


def b_assoc(m, *kvs):
    out = CMap(m or {})
    for k, v in zip(kvs[0::2], kvs[1::2]):
        out[k] = v
    return out


def b_dissoc(m, *ks):
    if isinstance(m, Chk):
        return m
    out = CMap(m or {})
    for k in ks:
        out.pop(k, None)
    return out


def b_select_keys(m, ks):
    if isinstance(m, Chk):
        return Proj(m, [k.name for k in ks])
    return CMap((k, m[k]) for k in ks if k in m)


def b_update(m, k, f, *args):
    out = CMap(m or {})
    out[k] = call(f, [out.get(k)] + list(args))
    return out


def b_map(f, *colls):
    return Vec(call(f, list(items)) for items in zip(*[seq(c) for c in colls]))


def b_mapcat(f, *colls):
    return Vec(x for items in zip(*[seq(c) for c in colls]) for x in seq(call(f, list(items))))


def b_comp(*fs):
    def composed(*args):
        result = call(fs[-1], list(args))
        for f in reversed(fs[:-1]):
            result = call(f, [result])
        return result

    return composed


def b_partial(f, *pre):
    return lambda *args: call(f, list(pre) + list(args))


def b_range(*args):
    return Vec(range(*[int(a) for a in args]))


def b_eq(*args):
    return all(a == args[0] for a in args[1:])


def b_div(a, *bs):
    result = fractions.Fraction(a)
    for b in bs:
        result /= b
    return int(result) if result.denominator == 1 else result


def b_minus(a, *bs):
    return -a if not bs else a - sum(bs)


def b_count(x):
    if isinstance(x, (Chk, Proj, FieldRef, Opaque)):
        return OPAQUE
    return len(seq(x)) if not isinstance(x, History) else len(x)


def b_nth(coll, i, *default):
    items = seq(coll)
    if 0 <= i < len(items):
        return items[i]
    if default:
        return default[0]
    raise Unsupported("nth out of range")


def b_get(m, k, default=None):
    if isinstance(m, (Chk, Proj, FieldRef, Opaque)):
        return OPAQUE
    if isinstance(m, dict):
        return m.get(k, default)
    if isinstance(m, (list, tuple)) and isinstance(k, int):
        return m[k] if 0 <= k < len(m) else default
    return default


def b_not(x):
    if isinstance(x, FieldRef):
        return NotRef(x)
    return not truthy(x)


class NotRef:
    """`(not (:valid? r))`."""

    def __init__(self, ref):
        self.ref = ref


def b_first(x):
    items = seq(x)
    return items[0] if items else None


BUILTINS = {
    "assoc": b_assoc,
    "dissoc": b_dissoc,
    "select-keys": b_select_keys,
    "update": b_update,
    "map": b_map,
    "mapv": b_map,
    "mapcat": b_mapcat,
    "comp": b_comp,
    "partial": b_partial,
    "range": b_range,
    "concat": lambda *cs: Vec(x for c in cs for x in seq(c)),
    "vec": lambda c: Vec(seq(c)),
    "vector": lambda *xs: Vec(xs),
    "list": lambda *xs: Vec(xs),
    "set": lambda c: frozenset(seq(c)),
    "hash-set": lambda *xs: frozenset(xs),
    "hash-map": lambda *kvs: CMap(zip(kvs[0::2], kvs[1::2])),
    "first": b_first,
    "second": lambda x: b_nth(x, 1, None),
    "last": lambda x: (seq(x) or [None])[-1],
    "rest": lambda x: Vec(seq(x)[1:]),
    "nth": b_nth,
    "get": b_get,
    "count": b_count,
    "inc": lambda x: x + 1,
    "dec": lambda x: x - 1,
    "+": lambda *xs: sum(xs),
    "-": b_minus,
    "*": lambda *xs: __import__("math").prod(xs),
    "/": b_div,
    "=": b_eq,
    "not=": lambda *xs: not b_eq(*xs),
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "mod": lambda a, b: a % b,
    "not": b_not,
    "nil?": lambda x: x is None,
    "identity": lambda x: x,
    "long": lambda x: int(x),
    "int": lambda x: int(x),
    "str": lambda *xs: "".join("" if x is None else (x if isinstance(x, str) else edn(x)) for x in xs),
    "keyword": lambda s: Kw(s),
    "h/history": lambda ops, *opts: History(seq(ops)),
    "h/strip-indices": lambda ops: Vec(b_dissoc(op, Kw("index")) for op in seq(ops)),
    "h/op": lambda op: op,
    "h/get-index": lambda h, i: h(i),
}
# Functions that see a checker result rather than turning it opaque.
CHK_AWARE = {b_dissoc, b_select_keys, b_not}

def b_truth(expected):
    def f(x):
        if isinstance(x, FieldRef):
            return TruthRef(x, expected)
        return x is expected

    return f


class TruthRef:
    """`(false? (:valid? r))`."""

    def __init__(self, ref, expected):
        self.ref = ref
        self.expected = expected


BUILTINS["false?"] = b_truth(False)
BUILTINS["true?"] = b_truth(True)
CHK_AWARE |= {BUILTINS["false?"], BUILTINS["true?"]}


# The op languages of the two test files.


def la_op(*args):
    """list-append's `op`: `ax1ay1` appends 1 to x and to y, `rx12` reads x = [1 2]."""
    if len(args) == 3:
        process, type_, string = args
        return b_assoc(la_op(string), Kw("process"), process, Kw("type"), type_)
    (string,) = args
    txn, mop = [], None
    for c in string:
        if c == "a":
            txn.append(mop)
            mop = [Kw("append")]
        elif c == "r":
            txn.append(mop)
            mop = [Kw("r")]
        elif c in "xyztu":
            mop = mop + [Kw(c)]
        else:
            e = int(c)
            f, k = mop[0], mop[1]
            v = mop[2] if len(mop) > 2 else None
            mop = [f, k, e if f == Kw("append") else Vec(list(v or []) + [e])]
    txn = txn[1:] + [mop]
    return CMap(
        [
            (Kw("time"), 0),
            (Kw("process"), 0),
            (Kw("type"), Kw("ok")),
            (Kw("f"), Kw("txn")),
            (Kw("value"), Vec(Vec(m) for m in txn)),
        ]
    )


def rw_op(*args):
    """rw-register's `op`: `wx1` sets x = 1, `ry1` reads y = 1, `rx_` reads x = nil."""
    if len(args) == 3:
        process, type_, string = args
        return b_assoc(rw_op(string), Kw("process"), process, Kw("type"), type_)
    (string,) = args
    txn, mop = [], None
    for c in string:
        if c == "w":
            txn.append(mop)
            mop = [Kw("w")]
        elif c == "r":
            txn.append(mop)
            mop = [Kw("r")]
        elif c in "xyz":
            mop = mop + [Kw(c)]
        else:
            e = None if c == "_" else int(c)
            mop = [mop[0], mop[1], e]
    txn = txn[1:] + [mop]
    return CMap([(Kw("process"), 0), (Kw("type"), Kw("ok")), (Kw("value"), Vec(Vec(m) for m in txn))])


def pair(completion):
    """An [invocation, completion] pair: the invocation's reads unfilled."""
    value = Vec(Vec([m[0], m[1], None]) if m[0] == Kw("r") else m for m in completion[Kw("value")])
    return Vec([b_assoc(completion, Kw("type"), Kw("invoke"), Kw("value"), value), completion])


# ---------------------------------------------------------------------------------------------------------------
# Elle's tests.


class ElleFile:
    """One of Elle's test files, its deftests evaluated."""

    def __init__(self, upstream, name, model, op):
        self.path = os.path.join(upstream, "elle", "test", "elle", name)
        self.upstream = upstream
        self.model = model
        self.chks = []
        self.skipped = []
        self.env = Env()
        for k, v in BUILTINS.items():
            self.env.set(k, v)
        self.env.set("op", op)
        self.env.set("pair", pair)
        self.env.set("fail", lambda o: b_assoc(o, Kw("type"), Kw("fail")))
        self.env.set("check", self.check)
        self.env.set("read-history", FileRef)
        self.context = []
        self.deftest_chks = []
        self.op_tests = 0
        for form in read_file(self.path, f"elle/test/elle/{name}"):
            self.top(form, self.env)

    def check(self, opts, history):
        if isinstance(history, (list, tuple)) and not isinstance(history, History):
            history = History(history)
        if not isinstance(history, (History, FileRef)):
            raise Unsupported("a check of something not a history")
        chk = Chk(opts or CMap(), history, "/".join(self.context))
        self.deftest_chks.append(chk)
        return chk

    def top(self, form, env):
        if not isinstance(form, Form) or not form or not isinstance(form[0], Sym):
            return
        head = form[0].name
        if head == "deftest":
            self.context = [form[1].name]
            self.deftest_chks = []
            self.body(form[2:], Env(env))
            self.chks.extend(c for c in self.deftest_chks if c.expect)
        elif head == "defn":
            name = form[1].name
            if name in ("op", "pair", "fail"):
                return  # modelled natively above
            rest = [f for f in form[2:] if not isinstance(f, str)]
            fn = sf_fn(Form([Sym("fn"), Sym(name)] + rest), env)
            env.set(name, fn)
        elif head == "let":
            # A top-level let around deftests (rw-register's `c`).
            inner = Env(env)
            bindings = list(form[1])
            for pattern, value in zip(bindings[0::2], bindings[1::2]):
                destructure(inner, pattern, evaluate(value, inner))
            for f in form[2:]:
                self.top(f, inner)

    def body(self, forms, env):
        for form in forms:
            self.statement(form, env)

    def statement(self, form, env):
        if not isinstance(form, Form) or not form or not isinstance(form[0], Sym):
            return
        head = form[0].name
        if head == "testing":
            self.context.append(form[1])
            self.body(form[2:], env)
            self.context.pop()
        elif head == "let":
            inner = Env(env)
            bindings = list(form[1])
            for pattern, value in zip(bindings[0::2], bindings[1::2]):
                try:
                    v = evaluate(value, inner)
                except Unsupported as e:
                    for name in names_in(pattern):
                        inner.set(name, e)
                    continue
                try:
                    destructure(inner, pattern, v)
                except Unsupported as e:
                    for name in names_in(pattern):
                        inner.set(name, e)
            self.body(form[2:], inner)
        elif head == "do":
            self.body(form[1:], env)
        elif head == "is":
            try:
                self.assertion(form[1], env)
            except Unsupported as e:
                self.skipped.append(("/".join(self.context), f"uses {e}"))
        # Anything else (deleting output files, printing, a check whose result is not asserted) asserts nothing.

    def assertion(self, form, env):
        if isinstance(form, Form) and form and form[0] == Sym("="):
            args = [evaluate(a, env) for a in form[1:]]
            observed = [a for a in args if isinstance(a, (Chk, Proj, FieldRef))]
            expected = [a for a in args if not isinstance(a, (Chk, Proj, FieldRef, Opaque))]
            if not observed:
                if self.context == ["op-test"]:
                    # Elle's own test of its op language checks the transcription's.
                    if not all(a == args[0] for a in args[1:]):
                        raise SystemExit(f"{self.path}: op-test fails on the transcription: {args}")
                    self.op_tests += 1
                return
            if len(expected) != 1:
                raise Unsupported("an assertion without one expected value")
            (want,) = expected
            for o in observed:
                if isinstance(o, Chk):
                    if not isinstance(want, dict):
                        raise Unsupported("a whole result compared with a non-map")
                    o.expect.update(want)
                    o.full = True
                elif isinstance(o, Proj):
                    for k in o.keys:
                        if Kw(k) in want:
                            o.chk.expect[Kw(k)] = want[Kw(k)]
                elif o.field in ("valid?", "anomaly-types", "not"):
                    o.chk.expect[Kw(o.field)] = want
            return
        value = evaluate(form, env)
        if isinstance(value, FieldRef) and value.field == "valid?":
            value.chk.expect[Kw("valid?")] = True
        elif isinstance(value, NotRef) and value.ref.field == "valid?":
            value.ref.chk.expect[Kw("valid?")] = False
        elif isinstance(value, TruthRef) and value.ref.field == "valid?":
            value.ref.chk.expect[Kw("valid?")] = value.expected


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def names_of(value, what):
    if isinstance(value, Unsupported):
        raise value
    if value is None:
        return []
    if isinstance(value, Kw):
        return [value.name]
    if isinstance(value, (list, tuple, frozenset, set)):
        out = []
        for v in value:
            if not isinstance(v, Kw):
                raise Unsupported(f"{what} holding {v!r}")
            out.append(v.name)
        return sorted(out)
    raise Unsupported(f"{what} {value!r}")


def option_words(opts):
    """Elle's checker options as the table writes them (faultline's CLI names; see the test's `options`)."""
    words = []
    for k, v in opts.items():
        name = k.name
        if name == "consistency-models":
            words.append("consistency-models=" + (",".join(names_of(v, name)) if v else "none"))
        elif name == "anomalies":
            words.append("anomalies=" + ",".join(names_of(v, name)))
        elif name == "wfr-keys?":
            if v:
                words.append("wfr-keys")
        elif name in ("linearizable-keys?", "sequential-keys?"):
            # Elle options faultline has no counterpart of: written down, not applied (see the test).
            if v:
                words.append(name.rstrip("?"))
        elif name == "transaction-order":
            words.append("transaction-order=" + ",".join(f"{a}:{b}" for a, b in v.items()))
        elif name in ("directory", "plot-format"):
            pass  # where Elle writes its report files
        else:
            raise Unsupported(f"checker option {name}")
    return " ".join(words) or "-"


UNKNOWN_ONLY = {"empty-transaction-graph", "cycle-search-timeout"}


def elle_row(chk, model, file):
    e = chk.expect
    anomalies = None
    if Kw("anomaly-types") in e:
        anomalies = names_of(e[Kw("anomaly-types")], "anomaly types")
    elif chk.full:
        anomalies = []
    nots = None
    if Kw("not") in e:
        nots = names_of(e[Kw("not")], ":not")
    elif chk.full:
        nots = []
    valid = e.get(Kw("valid?"), "unasserted")
    if valid is True:
        verdict = "valid"
    elif valid is False:
        verdict = "invalid"
    elif valid == Kw("unknown"):
        verdict = "unknown"
    elif valid == "unasserted" and anomalies and set(anomalies) - UNKNOWN_ONLY:
        # The test asserts the anomalies and the models ruled out, not `:valid?`: Elle's verdict is invalid exactly
        # when it finds an anomaly the checked models forbid, as these are.
        verdict = "invalid"
    else:
        raise Unsupported(f"a verdict of {valid!r}")
    return {
        "file": file,
        "model": model,
        "options": option_words(chk.opts),
        "expected_verdict": verdict,
        "expected_anomalies": column(anomalies),
        "expected_not": column(nots),
        "expected_op": "-",
    }


def column(items):
    if items is None:
        return "?"
    return ",".join(items) or "-"


def elle_cases(upstream, histories_out, log):
    rows = []
    for name, model, op in [
        ("list_append_test.clj", "list-append", la_op),
        ("rw_register_test.clj", "rw-register", rw_op),
    ]:
        tests = ElleFile(upstream, name, model, op)
        if tests.op_tests == 0:
            raise SystemExit(f"elle/test/elle/{name}: no op-test to check the op language's transcription against")
        files = {}  # transcription text -> path under the output
        used = set()
        for chk in tests.chks:
            try:
                if isinstance(chk.history, FileRef):
                    path = "elle/" + chk.history.path
                    if not os.path.isfile(os.path.join(upstream, path)):
                        log(f"elle/{name} {chk.where}: {path} is absent from the upstream copy")
                        continue
                else:
                    text = "".join(edn(op) + "\n" for op in chk.history.ops)
                    path = files.get(text)
                    if path is None:
                        base = f"elle/tests/{model}/" + slug(chk.where.replace("/", " "))
                        path, n = base + ".edn", 1
                        while path in used:
                            n += 1
                            path = f"{base}-{n}.edn"
                        used.add(path)
                        files[text] = path
                        if histories_out:
                            target = os.path.join(histories_out, path)
                            os.makedirs(os.path.dirname(target), exist_ok=True)
                            with open(target, "w", encoding="utf-8") as f:
                                f.write(f";; Transcribed by faultline's gen.py from jepsen-io/elle test/elle/{name},\n")
                                f.write(f";; {chk.where} (EPL-2.0: not for the repository).\n")
                                f.write(text)
                rows.append(elle_row(chk, model, path))
            except Unsupported as e:
                log(f"elle/{name} {chk.where}: not a case: {e}")
        for where, why in tests.skipped:
            log(f"elle/{name} {where}: an assertion not transcribed: {why}")
    return rows


# ---------------------------------------------------------------------------------------------------------------
# Knossos.


def knossos_ops(upstream, log):
    """The op each Knossos test names as the one that cannot be linearized, by data file."""
    named = {}
    test_dir = os.path.join(upstream, "knossos", "test", "knossos")
    for name in sorted(os.listdir(test_dir)):
        if not name.endswith(".clj"):
            continue
        for form in read_file(os.path.join(test_dir, name), f"knossos/test/knossos/{name}"):
            if not (isinstance(form, Form) and form and form[0] == Sym("deftest")):
                continue
            files = set()
            indices = set()
            walk_knossos(form, files, indices)
            if not indices or not files:
                continue
            if len(files) != 1 or len(indices) != 1:
                raise SystemExit(f"knossos/test/knossos/{name} {form[1]}: files {files} and ops {indices}")
            (file,) = files
            (index,) = indices
            if named.get(file, index) != index:
                raise SystemExit(f"Knossos's tests name two failing ops of {file}: {named[file]} and {index}")
            named[file] = index
    return named


def walk_knossos(form, files, indices):
    if isinstance(form, Form):
        if len(form) == 2 and form[0] == Sym("ct/read-history-2") and isinstance(form[1], str):
            files.add(form[1])
        # (= {... :index N} (:op a))
        if len(form) == 3 and form[0] == Sym("=") and isinstance(form[1], MapForm):
            if isinstance(form[2], Form) and tuple(form[2]) == (Kw("op"), Sym("a")):
                for k, v in form[1]:
                    if k == Kw("index"):
                        indices.add(v)
        for x in form:
            walk_knossos(x, files, indices)
    elif isinstance(form, (Vec, SetForm)):
        for x in form:
            walk_knossos(x, files, indices)
    elif isinstance(form, MapForm):
        for k, v in form:
            walk_knossos(k, files, indices)
            walk_knossos(v, files, indices)


def knossos_cases(upstream, log):
    named = knossos_ops(upstream, log)
    data = os.path.join(upstream, "knossos", "data")
    rows = []
    seen = set()
    for model in sorted(os.listdir(data)):
        if model == "multi-register":
            log("knossos/data/multi-register: faultline has no multi-register model (Knossos's {:x 0 :y 0} txn register)")
            continue
        if model not in ("cas-register", "mutex"):
            log(f"knossos/data/{model}: no faultline model")
            continue
        for folder, verdict in (("good", "valid"), ("bad", "invalid")):
            where = os.path.join(data, model, folder)
            if not os.path.isdir(where):
                continue
            for name in sorted(os.listdir(where), key=natural):
                if not name.endswith(".edn"):
                    continue
                rel = f"data/{model}/{folder}/{name}"
                seen.add(rel)
                op = named.get(rel)
                rows.append(
                    {
                        "file": "knossos/" + rel,
                        "model": model,
                        "options": "-",
                        "expected_verdict": verdict,
                        "expected_anomalies": "-",
                        "expected_not": "-",
                        "expected_op": "-" if op is None else str(op),
                    }
                )
    for rel in sorted(set(named) - seen):
        log(f"knossos: a test names the failing op of {rel}, which is not a case")
    return rows


def natural(name):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


# ---------------------------------------------------------------------------------------------------------------
# elle-cli.

# elle-cli options that change nothing of the verdict: where and how it draws plots, and Elle's cycle-search budget.
ELLE_CLI_COSMETIC = {"--plot-format", "--plot-timeout", "--max-plot-bytes", "--cycle-search-timeout"}
TXN_MODELS = {"list-append", "rw-register"}


def elle_cli_cases(upstream, log):
    rows = []
    seen = set()
    with open(os.path.join(upstream, "elle-cli", "test.sh"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r'\s*run_test\s+(\d+)\s+"([^"]*)"', line)
            if not m:
                continue
            code, words = int(m.group(1)), m.group(2).split()
            model, options, file = None, [], None
            i = 0
            while i < len(words):
                w = words[i]
                if w == "--model":
                    model = words[i + 1]
                    i += 2
                elif w in ELLE_CLI_COSMETIC:
                    i += 2
                elif w in ("--consistency-models", "--anomalies", "--group-size"):
                    options.append(f"{w[2:]}={words[i + 1]}")
                    i += 2
                elif w.startswith("--"):
                    raise SystemExit(f"elle-cli/test.sh: unknown option {w} in: {line.strip()}")
                else:
                    file = w
                    i += 1
            if code not in (0, 1):
                raise SystemExit(f"elle-cli/test.sh: exit code {code} in: {line.strip()}")
            path = "elle-cli/" + file
            if not os.path.isfile(os.path.join(upstream, path)):
                log(f"elle-cli/test.sh: {path} is absent from the upstream copy")
                continue
            row = {
                "file": path,
                "model": model,
                "options": " ".join(options) or "-",
                "expected_verdict": "valid" if code == 0 else "invalid",
                # elle-cli's test asserts only the exit code.
                "expected_anomalies": "?" if model in TXN_MODELS else "-",
                "expected_not": "?" if model in TXN_MODELS else "-",
                "expected_op": "-",
            }
            key = (row["file"], row["model"], row["options"])
            if key in seen:
                log(f"elle-cli/test.sh: {line.strip()}: the same case as an earlier line but for plotting options")
                continue
            seen.add(key)
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------------------------


def read_table(path):
    """The `faultline` and `reason` columns of an existing table, by file, model and options."""
    kept = {}
    if not path or not os.path.isfile(path):
        return kept
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for line in lines[1:]:
        if not line.strip():
            continue
        cols = line.split("\t")
        cols += [""] * (len(HEADER) - len(cols))
        kept[(cols[0], cols[1], cols[2])] = (cols[3:7], cols[7], cols[8])
    return kept


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", default=DEFAULT_UPSTREAM, help="the upstream data (default: %(default)s)")
    parser.add_argument("--histories", help="write the transcribed Elle histories under this directory")
    parser.add_argument("--table", help="write the table here (keeping its faultline and reason columns)")
    parser.add_argument("--keep", help="take the faultline and reason columns from this table instead")
    parser.add_argument("--verbose", action="store_true", help="say on stderr what was not made a case, and why")
    args = parser.parse_args()

    if not os.path.isfile(os.path.join(args.upstream, "README.md")):
        raise SystemExit(f"no upstream data at {args.upstream} (its README.md is missing)")

    def log(message):
        if args.verbose:
            print(f"gen.py: {message}", file=sys.stderr)

    rows = elle_cases(args.upstream, args.histories, log)
    rows += knossos_cases(args.upstream, log)
    rows += elle_cli_cases(args.upstream, log)

    kept = read_table(args.keep or args.table)
    seen = set()
    out = ["\t".join(HEADER)]
    for row in rows:
        key = (row["file"], row["model"], row["options"])
        if key in seen:
            raise SystemExit(f"two cases of {key}")
        seen.add(key)
        expected = [row[c] for c in HEADER[3:7]]
        faultline, reason = "=", ""
        if key in kept:
            old_expected, old_faultline, old_reason = kept[key]
            # What faultline said is kept while the expectation it was compared with is unchanged.
            if old_expected == expected:
                faultline, reason = old_faultline, old_reason
        out.append("\t".join([row[c] for c in HEADER[:7]] + [faultline, reason]))
    text = "\n".join(out) + "\n"
    if args.table:
        with open(args.table, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    counts = {}
    for row in rows:
        source = "/".join(row["file"].split("/")[:3]) if row["file"].startswith("elle/tests/") else row["file"].split("/")[0]
        counts[source] = counts.get(source, 0) + 1
    log("cases: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f", {len(rows)} in all")


if __name__ == "__main__":
    main()
