"""Mutation operators on HIP (or CUDA) source text: the small wrong programs an execution oracle must reject
(:mod:`cass.execution.mutation` builds, runs and judges them).

Every operator finds its sites in kernel code (the bodies of ``__global__`` and ``__device__`` functions; ``launch``
in host code, where kernels are launched), with comments, string literals and preprocessor lines masked, and
rewrites one site:

- ``arith``: a binary ``+``, ``-``, ``*`` or ``/`` swapped (``+`` <-> ``-``, ``*`` <-> ``/``);
- ``relational``: a comparison swapped, which also moves a bound by one (``<`` <-> ``<=``, ``>`` <-> ``>=``,
  ``==`` <-> ``!=``);
- ``constant``: a number literal plus one (``256`` -> ``257``, ``0.5f`` -> ``1.5f``);
- ``index``: an array subscript off by one (``a[i]`` -> ``a[(i) + 1]``);
- ``sync``: a ``__syncthreads()`` or ``__syncwarp(...)`` removed;
- ``atomic``: an atomic update made a plain one (``atomicAdd(p, v);`` -> ``*(p) += (v);``);
- ``launch``: a launch's grid and block dimensions swapped (``<<<g, b>>>``, ``hipLaunchKernelGGL(k, g, b, ...)``);
- ``early_return``: the last block of a kernel returns at once.

:func:`sample_mutants` draws a fixed number of mutants per program with a seed: distinct operators first, each with
a site drawn uniformly, so the same program and seed always give the same mutants.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import blake3

from cass.text.kernel_source import mask_source, match_close

OPERATORS = ("arith", "relational", "constant", "index", "sync", "atomic", "launch", "early_return")

TOKEN = re.compile(r"""(?P<number>(?:0[xX][0-9a-fA-F']+|(?:\d[\d']*\.?[\d']*|\.\d[\d']*)(?:[eE][-+]?\d+)?)[uUlLfF]*)
                      |(?P<name>[A-Za-z_]\w*)
                      |(?P<op><<<|>>>|<<=|>>=|->\*|\.\.\.|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|\S)""",
                   re.VERBOSE)
KEYWORDS = frozenset(("return", "if", "else", "for", "while", "do", "switch", "case", "default", "break", "continue",
    "goto", "sizeof", "new", "delete", "throw", "typedef", "using", "namespace", "template", "typename", "class",
    "struct", "union", "enum", "static", "extern", "inline", "const", "volatile", "constexpr", "auto", "register",
    "unsigned", "signed", "int", "long", "short", "char", "bool", "float", "double", "void", "__shared__",
    "__device__", "__global__", "__host__", "__restrict__", "__forceinline__", "__constant__", "static_cast",
    "reinterpret_cast", "const_cast", "dynamic_cast"))
TYPE_NAME = re.compile(r"(?:unsigned|signed|int|long|short|char|bool|float|double|void|auto|const|volatile|half|"
                       r"__half2?|\w+_t|float[1-4]|double[1-4]|u?int[1-4]|u?char[1-4]|u?short[1-4]|u?long[1-4]|"
                       r"dim3|[A-Z])")
"""Names a ``*`` or ``[`` after which is a declaration, not arithmetic or indexing."""
SWAPS = {"+": "-", "-": "+", "*": "/", "/": "*", "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
PLAIN_ATOMICS = {"atomicAdd": "+=", "atomicSub": "-=", "atomicAnd": "&=", "atomicOr": "|=", "atomicXor": "^=",
                 "atomicExch": "="}
EARLY_RETURN = "if (blockIdx.x == gridDim.x - 1) return; "
DEVICE = re.compile(r"\b(?:__global__|__device__)\b")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Mutant:
    """One rewrite of one file: ``text[start:end]`` becomes ``replacement``."""

    path: str
    operator: str
    start: int
    end: int
    original: str
    replacement: str
    line: int

    def apply(self, text: str) -> str:
        if text[self.start:self.end] != self.original:
            raise ValueError(f"{self.path}: the text at {self.start} is not {self.original!r}: another version?")
        return text[:self.start] + self.replacement + text[self.end:]

    def describe(self) -> str:
        return f"{self.operator} {self.path}:{self.line}: {self.original!r} -> {self.replacement!r}"


def tokens(masked: str, start: int = 0, end: int | None = None) -> list[Token]:
    """The tokens of ``masked[start:end]`` (masked text: comments, literals and preprocessor lines are spaces)."""
    return [Token(m.lastgroup, m.group(), m.start(), m.end())
            for m in TOKEN.finditer(masked, start, len(masked) if end is None else end)]


def device_bodies(masked: str) -> list[tuple[int, int, bool]]:
    """(start, end, is a kernel) of the body of every ``__global__`` or ``__device__`` function, braces included."""
    bodies = []
    for m in DEVICE.finditer(masked):
        paren = masked.find("(", m.end())
        stop = min((i for i in (masked.find(";", m.end()), masked.find("{", m.end())) if i >= 0), default=-1)
        if paren < 0 or (0 <= stop < paren):   # a __device__ variable, not a function
            continue
        close = match_close(masked, paren, "(", ")")
        if close is None:
            continue
        j = close + 1
        while j < len(masked) and masked[j] not in "{;":
            j += 1
        if j >= len(masked) or masked[j] != "{":
            continue
        end = match_close(masked, j, "{", "}")
        if end is not None and not any(s <= j < e for s, e, _ in bodies):
            bodies.append((j, end + 1, m.group() == "__global__"))
    return bodies


def _operand_before(toks: list[Token], i: int) -> bool:
    """Whether the token before ``i`` ends an operand (a name, a number, ``)`` or ``]``)."""
    if i == 0:
        return False
    prev = toks[i - 1]
    return prev.kind == "number" or (prev.kind == "name" and prev.text not in KEYWORDS) or prev.text in (")", "]")


def _declares(toks: list[Token], i: int) -> bool:
    """Whether the name before token ``i`` is a type that starts a declaration (``float *p``, ``T s[4]``)."""
    if i < 1 or toks[i - 1].kind != "name":
        return False
    name = toks[i - 1]
    before = toks[i - 2].text if i >= 2 else ";"
    return TYPE_NAME.fullmatch(name.text) is not None and (before in ("(", ",", "{", ";", "}", "const", ">")
                                                             or toks[i - 2].kind == "name")


def _template_open(masked: str, tok: Token) -> bool:
    """Whether a ``<`` opens a template argument list (``static_cast<int>(x)``, ``foo<T, 4>``)."""
    return re.match(r"\s*[\w:\s,*&]*>", masked[tok.end:tok.end + 80]) is not None


def _template_close(masked: str, tok: Token) -> bool:
    """Whether a ``>`` closes a template argument list (``Vec<T> w``, ``reduce<4>(x)``)."""
    return re.search(r"\w\s*<[\w:\s,*&]*$", masked[max(0, tok.start - 80):tok.start]) is not None


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def sites(path: str, text: str) -> list[Mutant]:
    """Every mutant of ``text`` (the file at ``path``) by the operators of :data:`OPERATORS`."""
    masked = mask_source(text)
    found: list[Mutant] = []

    def add(operator: str, start: int, end: int, replacement: str) -> None:
        if text[start:end] != replacement:   # a launch whose grid and block are spelled alike changes nothing
            found.append(Mutant(path, operator, start, end, text[start:end], replacement, _line(text, start)))

    bodies = device_bodies(masked)
    for start, end, is_kernel in bodies:
        toks = tokens(masked, start, end)
        if is_kernel:
            add("early_return", start + 1, start + 1, EARLY_RETURN)
        for i in range(len(toks)):
            if (site := _kernel_site(text, masked, toks, i)) is not None:
                add(*site)
    outside = [(s, e) for s, e, _ in bodies]
    for tok in tokens(masked):
        if any(s <= tok.start < e for s, e in outside):
            continue
        if tok.text == "<<<":
            close = masked.find(">>>", tok.end)
            if close > 0 and (args := _split_args(masked, tok.end, close)) and len(args) >= 2:
                (g0, g1), (b0, b1) = args[0], args[1]
                add("launch", g0, b1, f"{text[b0:b1].strip()}, {text[g0:g1].strip()}")
        elif tok.text == "hipLaunchKernelGGL":
            paren = masked.find("(", tok.end)
            close = match_close(masked, paren, "(", ")") if paren >= 0 else None
            if close is not None and (args := _split_args(masked, paren + 1, close)) and len(args) >= 3:
                (g0, g1), (b0, b1) = args[1], args[2]
                add("launch", g0, b1, f"{text[b0:b1].strip()}, {text[g0:g1].strip()}")
    return found


def _kernel_site(text: str, masked: str, toks: list[Token], i: int) -> tuple[str, int, int, str] | None:
    """(operator, start, end, replacement) of the kernel-code site at token ``i``, or None."""
    tok = toks[i]
    after = toks[i + 1].text if i + 1 < len(toks) else ""
    operand = _operand_before(toks, i)
    if operand and (tok.text in ("+", "-", "/") or (tok.text == "*" and _multiplies(toks, i))):
        return "arith", tok.start, tok.end, SWAPS[tok.text]
    if operand and ((tok.text in ("<=", ">=", "==", "!=") and after not in ("(", "::"))
                    or (tok.text == ">" and after not in ("(", "::") and not _template_close(masked, tok))
                    or (tok.text == "<" and not _template_open(masked, tok))):
        return "relational", tok.start, tok.end, SWAPS[tok.text]
    if tok.kind == "number" and not _fixed_number(masked, toks, i):
        return "constant", tok.start, tok.end, _plus_one(tok.text)
    if tok.text == "[" and operand and not _in_declaration(toks, i):
        close = match_close(masked, tok.start, "[", "]")
        subscript = masked[tok.end:close].strip() if close is not None else ""
        literal = (m := TOKEN.fullmatch(subscript)) is not None and m.lastgroup == "number"   # `constant`'s site
        if subscript and not literal:
            return "index", tok.end, close, f"({text[tok.end:close]}) + 1"
    if tok.text in ("__syncthreads", "__syncwarp") and after == "(":
        close = match_close(masked, toks[i + 1].start, "(", ")")
        if close is not None:
            return "sync", tok.start, close + 1, "(void)0"
    statement = i == 0 or toks[i - 1].text in (";", "{", "}")
    if tok.text in PLAIN_ATOMICS and after == "(" and statement and (atomic := _plain_atomic(text, masked, toks, i)):
        return ("atomic", *atomic)
    return None


def _statement_start(toks: list[Token], i: int) -> int:
    """The index of the first token of the statement that holds token ``i``."""
    j = i - 1
    while j >= 0 and toks[j].text not in (";", "{", "}"):
        j -= 1
    return j + 1


def _in_declaration(toks: list[Token], i: int) -> bool:
    """Whether token ``i`` is in the declarator of a declaration without an initializer before it (``__shared__
    float tile[16][17];``, ``float r[4]``): its sizes are no values the kernel computes."""
    start = _statement_start(toks, i)
    first = toks[start]
    return ((first.text in ("__shared__", "static", "const", "extern", "constexpr") or
             (first.kind == "name" and TYPE_NAME.fullmatch(first.text) is not None and start + 1 < i
              and toks[start + 1].kind == "name"))
            and not any(t.text == "=" for t in toks[start:i]))


def _enclosing_template(masked: str, toks: list[Token], i: int) -> bool:
    """Whether token ``i`` sits between a ``<`` that opens a template argument list and its ``>``."""
    depth = 0
    for j in range(i - 1, _statement_start(toks, i) - 1, -1):
        if toks[j].text in (">", ">>"):
            depth += len(toks[j].text)
        elif toks[j].text == "<":
            if depth == 0:
                return _template_open(masked, toks[j])
            depth -= 1
    return False


def _fixed_number(masked: str, toks: list[Token], i: int) -> bool:
    """Whether the number at ``i`` is no value to change: an array's declared size, a template argument, a ``case``
    label (two labels would clash), or the start of a literal the tokenizer split (``0b101``)."""
    glued = toks[i].end < len(masked) and (masked[toks[i].end].isalnum() or masked[toks[i].end] == "_")
    return (glued or (i > 0 and toks[i - 1].text == "case") or _in_declaration(toks, i)
            or _enclosing_template(masked, toks, i))


def _multiplies(toks: list[Token], i: int) -> bool:
    """Whether the ``*`` at ``i`` multiplies: not a pointer's declarator (``float *p``, ``Node *n``), a cast's
    (``(half2*)y``, ``<const float4*>``) or a dereference that starts a statement (``if (n > 0) *out = v``)."""
    after = toks[i + 1].text if i + 1 < len(toks) else ""
    if after in (")", ">", ",", "*", "&") or _declares(toks, i):
        return False
    prev = toks[i - 1]
    if prev.kind == "name" and _statement_start(toks, i) == i - 1:   # `Node *n = ...`: a type starts the statement
        return False
    if prev.text == ")":   # `if (...) *out = v`: the parenthesis closes a condition
        depth = 0
        for j in range(i - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(toks[j].text, 0)
            if depth == 0:
                return not (j > 0 and toks[j - 1].text in ("if", "for", "while", "switch"))
    return True


def _plus_one(literal: str) -> str:
    """A number literal plus one, its suffix kept (``0x10u`` -> ``0x11u``, ``2.5f`` -> ``3.5f``)."""
    body = literal.rstrip("uUlL" if literal[:2].lower() == "0x" else "uUlLfF")   # 0xFF: F is a digit
    suffix = literal[len(body):]
    clean = body.replace("'", "")
    if clean.lower().startswith("0x"):
        return f"{hex(int(clean, 16) + 1)}{suffix}"
    if re.fullmatch(r"\d+", clean):
        return f"{int(clean) + 1}{suffix}"
    value = repr(float(clean) + 1.0)
    return f"{value}{suffix}" if "f" not in suffix.lower() or "." in value or "e" in value else f"{value}.0{suffix}"


def _split_args(masked: str, start: int, end: int) -> list[tuple[int, int]]:
    """The spans of the comma-separated arguments of ``masked[start:end]`` (commas inside brackets kept)."""
    spans, depth, begin = [], 0, start
    for j in range(start, end):
        c = masked[j]
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth = max(0, depth - 1)
        elif c == "," and depth == 0:
            spans.append((begin, j))
            begin = j + 1
    spans.append((begin, end))
    return [(s + len(masked[s:e]) - len(masked[s:e].lstrip()), e - (len(masked[s:e]) - len(masked[s:e].rstrip())))
            for s, e in spans]


def _plain_atomic(text: str, masked: str, toks: list[Token], i: int) -> tuple[int, int, str] | None:
    """(start, end, replacement) that makes the atomic call at ``toks[i]`` (a whole statement) a plain update."""
    paren = toks[i + 1].start
    close = match_close(masked, paren, "(", ")")
    if close is None or masked[close + 1:].lstrip()[:1] != ";":
        return None
    args = _split_args(masked, paren + 1, close)
    if len(args) != 2:
        return None
    (a0, a1), (v0, v1) = args
    return toks[i].start, close + 1, f"*({text[a0:a1]}) {PLAIN_ATOMICS[toks[i].text]} ({text[v0:v1]})"


def sample_mutants(files: dict[str, str], count: int, seed: str, program: str) -> list[Mutant]:
    """``count`` mutants of a program's files (path: text), drawn with ``seed`` for ``program``: operators in a
    random order (each at most once while others are left), a site drawn uniformly within each."""
    by_operator: dict[str, list[Mutant]] = {}
    for path in sorted(files) if count else ():
        for mutant in sites(path, files[path]):
            by_operator.setdefault(mutant.operator, []).append(mutant)
    rng = random.Random(blake3.blake3(f"{seed}:{program}".encode()).digest())
    chosen: list[Mutant] = []
    pool = {op: list(ms) for op, ms in by_operator.items()}
    while len(chosen) < count and any(pool.values()):
        for operator in rng.sample(sorted(op for op, ms in pool.items() if ms), k=sum(1 for ms in pool.values() if ms)):
            if len(chosen) == count:
                break
            chosen.append(pool[operator].pop(rng.randrange(len(pool[operator]))))
    return chosen
