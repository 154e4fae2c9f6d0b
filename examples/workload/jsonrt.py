"""A JSON round trip in pure Python: generate, encode, decode, compare.

The encoder walks nested dicts and lists with a string escaper; the
decoder is a recursive-descent parser over the text (no regular
expressions on the hot path).  Documents are generated from a seeded
random generator, so every run does the same work.  The standard json
module checks the result, its C accelerator doing the other half.

    workload(scale) -> (documents, bytes encoded, checksum)
"""
import json
import random

ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
           "\b": "\\b", "\f": "\\f"}


class DecodeError(ValueError):
    pass


def encode(obj):
    out = []
    _encode(obj, out.append)
    return "".join(out)


def _encode_str(s, put):
    put('"')
    start = 0
    for i, ch in enumerate(s):
        esc = ESCAPES.get(ch)
        if esc is None and ch < " ":
            esc = "\\u%04x" % ord(ch)
        if esc is not None:
            if start < i:
                put(s[start:i])
            put(esc)
            start = i + 1
    if start < len(s):
        put(s[start:])
    put('"')


def _encode(obj, put):
    if obj is None:
        put("null")
    elif obj is True:
        put("true")
    elif obj is False:
        put("false")
    elif isinstance(obj, str):
        _encode_str(obj, put)
    elif isinstance(obj, int):
        put(str(obj))
    elif isinstance(obj, float):
        put(repr(obj))
    elif isinstance(obj, dict):
        put("{")
        first = True
        for k, v in obj.items():
            if not first:
                put(",")
            first = False
            _encode_str(k, put)
            put(":")
            _encode(v, put)
        put("}")
    elif isinstance(obj, (list, tuple)):
        put("[")
        for i, v in enumerate(obj):
            if i:
                put(",")
            _encode(v, put)
        put("]")
    else:
        raise TypeError("cannot encode %r" % (obj,))


class Decoder(object):
    def __init__(self, text):
        self.s = text
        self.i = 0

    def error(self, what):
        raise DecodeError("%s at offset %d" % (what, self.i))

    def ws(self):
        s, i, n = self.s, self.i, len(self.s)
        while i < n and s[i] in " \t\n\r":
            i += 1
        self.i = i

    def value(self):
        self.ws()
        if self.i >= len(self.s):
            self.error("unexpected end")
        c = self.s[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == '"':
            return self.string()
        if c in "-0123456789":
            return self.number()
        for word, val in (("true", True), ("false", False), ("null", None)):
            if self.s.startswith(word, self.i):
                self.i += len(word)
                return val
        self.error("unexpected %r" % c)

    def obj(self):
        self.i += 1
        result = {}
        self.ws()
        if self.s[self.i] == "}":
            self.i += 1
            return result
        while True:
            self.ws()
            if self.s[self.i] != '"':
                self.error("expected a key")
            key = self.string()
            self.ws()
            if self.s[self.i] != ":":
                self.error("expected ':'")
            self.i += 1
            result[key] = self.value()
            self.ws()
            c = self.s[self.i]
            self.i += 1
            if c == "}":
                return result
            if c != ",":
                self.error("expected ',' or '}'")

    def arr(self):
        self.i += 1
        result = []
        self.ws()
        if self.s[self.i] == "]":
            self.i += 1
            return result
        while True:
            result.append(self.value())
            self.ws()
            c = self.s[self.i]
            self.i += 1
            if c == "]":
                return result
            if c != ",":
                self.error("expected ',' or ']'")

    def string(self):
        s = self.s
        i = self.i + 1
        parts = []
        start = i
        while True:
            c = s[i]
            if c == '"':
                parts.append(s[start:i])
                self.i = i + 1
                return "".join(parts)
            if c == "\\":
                parts.append(s[start:i])
                e = s[i + 1]
                if e == "u":
                    parts.append(chr(int(s[i + 2:i + 6], 16)))
                    i += 6
                else:
                    parts.append({"n": "\n", "r": "\r", "t": "\t", "b": "\b",
                                  "f": "\f"}.get(e, e))
                    i += 2
                start = i
            else:
                i += 1

    def number(self):
        s, i = self.s, self.i
        j = i
        if s[j] == "-":
            j += 1
        while j < len(s) and s[j] in "0123456789.eE+-":
            j += 1
        text = s[i:j]
        self.i = j
        try:
            if "." in text or "e" in text or "E" in text:
                return float(text)
            return int(text)
        except ValueError:
            self.error("bad number %r" % text)


def decode(text):
    d = Decoder(text)
    v = d.value()
    d.ws()
    if d.i != len(text):
        d.error("trailing data")
    return v


WORDS = ["alpha", "beta", "gamma", "delta", "eval", "loop", "frame", "opcode",
         "tab\there", 'quote"d', "line\nbreak", "caf\u00e9", "\x01ctl"]


def make_doc(rng, depth=0):
    kind = rng.random()
    if depth > 3 or kind < 0.3:
        leaf = rng.randrange(6)
        if leaf == 0:
            return rng.randrange(-10 ** 6, 10 ** 6)
        if leaf == 1:
            return round(rng.uniform(-1000, 1000), 3)
        if leaf == 2:
            return rng.choice([True, False, None])
        return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 5)))
    if kind < 0.65:
        return [make_doc(rng, depth + 1) for _ in range(rng.randrange(0, 7))]
    return {"%s_%d" % (rng.choice(WORDS), i): make_doc(rng, depth + 1)
            for i in range(rng.randrange(0, 7))}


def workload(scale=1.0):
    rng = random.Random(1234)
    docs = max(1, int(6000 * scale))
    total = 0
    checksum = 0
    for n in range(docs):
        doc = make_doc(rng)
        text = encode(doc)
        back = decode(text)
        if back != doc or json.loads(text) != doc:
            raise AssertionError("round trip failed for document %d" % n)
        total += len(text)
        checksum = (checksum * 31 + len(text)) % 1000003
    try:
        decode('{"broken": [1, 2,}')
    except DecodeError:
        checksum += 1
    return docs, total, checksum
