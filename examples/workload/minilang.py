"""A small interpreter: tokenizer, Pratt parser, tree-walking evaluator.

The language has numbers, strings, variables, arithmetic and comparison,
``if``/``while``, first-class functions with closures and recursion, and
lists.  It is the kind of code CPython runs all day: many small method
calls, dictionary look-ups, a generator feeding a parser, exceptions for
control flow (``return``).

    run(source) -> (value of the last statement, printed lines)
"""
import re

TOKEN = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<num>\d+(?:\.\d+)?)
  | (?P<str>"[^"]*")
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[-+*/%<>=(){}\[\],;!])
""", re.VERBOSE)

KEYWORDS = {"let", "fn", "if", "else", "while", "return", "true", "false",
            "nil", "print"}


class LangError(Exception):
    pass


class Token(object):
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind, text, pos):
        self.kind, self.text, self.pos = kind, text, pos

    def __repr__(self):
        return "Token(%s, %r)" % (self.kind, self.text)


def tokenize(src):
    pos = 0
    while pos < len(src):
        m = TOKEN.match(src, pos)
        if m is None:
            raise LangError("bad character %r at %d" % (src[pos], pos))
        kind = m.lastgroup
        text = m.group()
        pos = m.end()
        if kind == "ws":
            continue
        if kind == "name" and text in KEYWORDS:
            kind = text
        yield Token(kind, text, m.start())
    yield Token("eof", "", pos)


# ---- syntax tree ------------------------------------------------------------

class Node(object):
    __slots__ = ()


class Num(Node):
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def eval(self, env):
        return self.value


class Str(Node):
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def eval(self, env):
        return self.value


class Const(Node):
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def eval(self, env):
        return self.value


class Var(Node):
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def eval(self, env):
        return env.lookup(self.name)


class Assign(Node):
    __slots__ = ("name", "expr", "declare")

    def __init__(self, name, expr, declare):
        self.name, self.expr, self.declare = name, expr, declare

    def eval(self, env):
        value = self.expr.eval(env)
        if self.declare:
            env.vars[self.name] = value
        else:
            env.assign(self.name, value)
        return value


def _div(a, b):
    if b == 0:
        raise LangError("division by zero")
    return a / b if isinstance(a, float) or isinstance(b, float) else a // b


BINARY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _div,
    "%": lambda a, b: a % b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


class Binary(Node):
    __slots__ = ("op", "left", "right", "fn")

    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right
        self.fn = BINARY[op]

    def eval(self, env):
        return self.fn(self.left.eval(env), self.right.eval(env))


class Logic(Node):
    __slots__ = ("op", "left", "right")

    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right

    def eval(self, env):
        v = self.left.eval(env)
        if self.op == "&&":
            return self.right.eval(env) if truthy(v) else v
        return v if truthy(v) else self.right.eval(env)


class Unary(Node):
    __slots__ = ("op", "expr")

    def __init__(self, op, expr):
        self.op, self.expr = op, expr

    def eval(self, env):
        v = self.expr.eval(env)
        return -v if self.op == "-" else not truthy(v)


class ListLit(Node):
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items

    def eval(self, env):
        return [item.eval(env) for item in self.items]


class Index(Node):
    __slots__ = ("target", "index")

    def __init__(self, target, index):
        self.target, self.index = target, index

    def eval(self, env):
        seq = self.target.eval(env)
        i = self.index.eval(env)
        try:
            return seq[i]
        except (IndexError, TypeError):
            raise LangError("bad index %r" % (i,))


class Call(Node):
    __slots__ = ("fn", "args")

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def eval(self, env):
        fn = self.fn.eval(env)
        args = [a.eval(env) for a in self.args]
        if callable(fn):
            return fn(*args)
        if not isinstance(fn, Function):
            raise LangError("not a function: %r" % (fn,))
        return fn.call(args)


class FnLit(Node):
    __slots__ = ("params", "body", "name")

    def __init__(self, params, body, name="<fn>"):
        self.params, self.body, self.name = params, body, name

    def eval(self, env):
        return Function(self, env)


class Block(Node):
    __slots__ = ("stmts",)

    def __init__(self, stmts):
        self.stmts = stmts

    def eval(self, env):
        value = None
        for s in self.stmts:
            value = s.eval(env)
        return value


class If(Node):
    __slots__ = ("cond", "then", "other")

    def __init__(self, cond, then, other):
        self.cond, self.then, self.other = cond, then, other

    def eval(self, env):
        if truthy(self.cond.eval(env)):
            return self.then.eval(Env(env))
        if self.other is not None:
            return self.other.eval(Env(env))
        return None


class While(Node):
    __slots__ = ("cond", "body")

    def __init__(self, cond, body):
        self.cond, self.body = cond, body

    def eval(self, env):
        value = None
        while truthy(self.cond.eval(env)):
            value = self.body.eval(Env(env))
        return value


class ReturnSignal(Exception):
    def __init__(self, value):
        self.value = value


class Return(Node):
    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr

    def eval(self, env):
        raise ReturnSignal(self.expr.eval(env) if self.expr else None)


class Print(Node):
    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr

    def eval(self, env):
        v = self.expr.eval(env)
        env.output().append(show(v))
        return v


def truthy(v):
    return v is not None and v is not False and v != 0


def show(v):
    if v is None:
        return "nil"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, list):
        return "[" + ", ".join(show(x) for x in v) + "]"
    if isinstance(v, Function):
        return "<fn %s>" % v.node.name
    return str(v)


# ---- runtime ------------------------------------------------------------------

class Env(object):
    __slots__ = ("vars", "parent")

    def __init__(self, parent=None):
        self.vars = {}
        self.parent = parent

    def lookup(self, name):
        env = self
        while env is not None:
            try:
                return env.vars[name]
            except KeyError:
                env = env.parent
        raise LangError("undefined variable %s" % name)

    def assign(self, name, value):
        env = self
        while env is not None:
            if name in env.vars:
                env.vars[name] = value
                return
            env = env.parent
        raise LangError("assignment to undeclared %s" % name)

    def output(self):
        env = self
        while env.parent is not None:
            env = env.parent
        return env.vars["__output__"]


class Function(object):
    __slots__ = ("node", "closure")

    def __init__(self, node, closure):
        self.node, self.closure = node, closure

    def call(self, args):
        params = self.node.params
        if len(args) != len(params):
            raise LangError("%s takes %d arguments, got %d"
                            % (self.node.name, len(params), len(args)))
        env = Env(self.closure)
        env.vars.update(zip(params, args))
        try:
            return self.node.body.eval(env)
        except ReturnSignal as r:
            return r.value


# ---- parser -------------------------------------------------------------------

PRECEDENCE = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, ">": 4, "<=": 4,
              ">=": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}


class Parser(object):
    def __init__(self, src):
        self.tokens = tokenize(src)
        self.tok = next(self.tokens)

    def advance(self):
        tok = self.tok
        self.tok = next(self.tokens)
        return tok

    def expect(self, text):
        if self.tok.text != text:
            raise LangError("expected %r, got %r at %d"
                            % (text, self.tok.text, self.tok.pos))
        return self.advance()

    def program(self):
        stmts = []
        while self.tok.kind != "eof":
            stmts.append(self.statement())
        return Block(stmts)

    def block(self):
        self.expect("{")
        stmts = []
        while self.tok.text != "}":
            stmts.append(self.statement())
        self.expect("}")
        return Block(stmts)

    def statement(self):
        kind = self.tok.kind
        if kind == "let":
            self.advance()
            name = self.advance().text
            self.expect("=")
            expr = self.expression(0)
            if isinstance(expr, FnLit):
                expr.name = name
            self.expect(";")
            return Assign(name, expr, True)
        if kind == "if":
            self.advance()
            cond = self.expression(0)
            then = self.block()
            other = None
            if self.tok.kind == "else":
                self.advance()
                other = self.statement() if self.tok.kind == "if" \
                    else self.block()
            return If(cond, then, other)
        if kind == "while":
            self.advance()
            cond = self.expression(0)
            return While(cond, self.block())
        if kind == "return":
            self.advance()
            expr = None if self.tok.text == ";" else self.expression(0)
            self.expect(";")
            return Return(expr)
        if kind == "print":
            self.advance()
            expr = self.expression(0)
            self.expect(";")
            return Print(expr)
        if kind == "name":
            # assignment or expression statement
            expr = self.expression(0)
            if self.tok.text == "=" and isinstance(expr, Var):
                self.advance()
                value = self.expression(0)
                self.expect(";")
                return Assign(expr.name, value, False)
            self.expect(";")
            return expr
        expr = self.expression(0)
        self.expect(";")
        return expr

    def expression(self, min_prec):
        left = self.prefix()
        while True:
            op = self.tok.text
            prec = PRECEDENCE.get(op) if self.tok.kind == "op" else None
            if prec is None or prec <= min_prec:
                return left
            self.advance()
            right = self.expression(prec)
            if op in ("&&", "||"):
                left = Logic(op, left, right)
            else:
                left = Binary(op, left, right)

    def prefix(self):
        tok = self.advance()
        kind = tok.kind
        if kind == "num":
            node = Num(float(tok.text) if "." in tok.text else int(tok.text))
        elif kind == "str":
            node = Str(tok.text[1:-1])
        elif kind == "true":
            node = Const(True)
        elif kind == "false":
            node = Const(False)
        elif kind == "nil":
            node = Const(None)
        elif kind == "name":
            node = Var(tok.text)
        elif tok.text == "(":
            node = self.expression(0)
            self.expect(")")
        elif tok.text == "[":
            node = ListLit(self.arguments("]"))
        elif tok.text in ("-", "!"):
            node = Unary(tok.text, self.expression(7))
        elif kind == "fn":
            self.expect("(")
            params = []
            while self.tok.text != ")":
                params.append(self.advance().text)
                if self.tok.text == ",":
                    self.advance()
            self.expect(")")
            node = FnLit(params, self.block())
        else:
            raise LangError("unexpected %r at %d" % (tok.text, tok.pos))
        return self.postfix(node)

    def postfix(self, node):
        while True:
            if self.tok.text == "(":
                self.advance()
                node = Call(node, self.arguments(")"))
            elif self.tok.text == "[":
                self.advance()
                index = self.expression(0)
                self.expect("]")
                node = Index(node, index)
            else:
                return node

    def arguments(self, close):
        args = []
        while self.tok.text != close:
            args.append(self.expression(0))
            if self.tok.text == ",":
                self.advance()
        self.expect(close)
        return args


def builtins(env):
    env.vars["len"] = len
    env.vars["push"] = lambda lst, x: lst.append(x) or lst
    env.vars["str"] = show
    env.vars["__output__"] = []


def run(src):
    env = Env()
    builtins(env)
    tree = Parser(src).program()
    value = tree.eval(env)
    return value, env.vars["__output__"]


PROGRAM = """
# Recursion, closures, loops and lists in a toy language.
let fib = fn(n) { if n < 2 { return n; } return fib(n - 1) + fib(n - 2); };
let make_counter = fn() {
    let count = 0;
    return fn() { count = count + 1; return count; };
};
let primes = fn(limit) {
    let sieve = [];
    let i = 0;
    while i <= limit { push(sieve, true); i = i + 1; }
    let found = [];
    let p = 2;
    while p <= limit {
        if sieve[p] {
            push(found, p);
            let m = p * p;
            while m <= limit { sieve = set(sieve, m, false); m = m + p; }
        }
        p = p + 1;
    }
    return found;
};
let set = fn(lst, i, v) { lst[i]; return replace(lst, i, v); };
let counter = make_counter();
let total = 0;
let k = 0;
while k < ROUNDS {
    total = total + fib(FIB) + counter();
    k = k + 1;
}
let ps = primes(LIMIT);
print len(ps);
print total;
total + len(ps);
"""


def replace(lst, i, v):
    lst[i] = v
    return lst


def workload(scale=1.0):
    rounds = max(1, int(100 * scale))
    src = (PROGRAM.replace("ROUNDS", str(rounds))
           .replace("FIB", "15").replace("LIMIT", str(int(15000 * scale) + 50)))
    env = Env()
    builtins(env)
    env.vars["replace"] = replace
    tree = Parser(src).program()
    value = tree.eval(env)
    # A program with an error, caught: exceptions are part of real code.
    try:
        run("let x = 1 / 0;")
    except LangError:
        value += 1
    return value, env.vars["__output__"]
