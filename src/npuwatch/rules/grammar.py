"""The rule condition language, parsed with pyparsing into a small syntax tree.

    error.code == EI0002
    error.code in E30000..E39999 or ascend.runtime_codes in [207001, 507899]
    log.logger == HCCL and log.level in [ERROR, WARNING] and message ~ /time(d)? ?out/i
    ascend.format == c10 and not message contains "Warning"
    fields.cost_ms > 60000

Fields are named by their ECS names; values are quoted strings, numbers, bare words (`ERROR`,
`HCCL`, `E30009`) or, for codes, ranges `E30000..E39999`. Operators: `==`, `!=`, `<`, `<=`, `>`,
`>=`, `in [...]`, `~ /regex/flags`, `contains`, `startswith`, `exists`; combined with `not`,
`and`, `or` (in that order of binding) and parentheses. Every node keeps the position of its
text, so that errors can point at it.
"""

from __future__ import annotations

import re
from typing import Any

import pyparsing as pp

from npuwatch.rules.condition import MAX_NESTING, And, Comparison, Node, Not, Or


class ConditionSyntaxError(ValueError):
    """A condition that does not parse; `column` counts from 1 within the condition text."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


def _build() -> pp.ParserElement:
    keywords = {"and", "or", "not", "in", "contains", "startswith", "exists"}
    keyword = pp.MatchFirst([pp.Keyword(word) for word in sorted(keywords)])
    identifier = pp.Word(pp.alphas + "@_", pp.alphanums + "_")
    field = pp.Combine(identifier + pp.ZeroOrMore("." + identifier)).set_name("field name")
    string = (pp.QuotedString('"', esc_char="\\") | pp.QuotedString("'", esc_char="\\")).set_name(
        "quoted string"
    )
    number = pp.Regex(r"-?\d+(\.\d+)?(?![\w.])").set_name("number")
    number.set_parse_action(lambda t: float(t[0]) if "." in t[0] else int(t[0]))
    bare = (~keyword + pp.Regex(r"[A-Za-z0-9_][\w\-:]*")).set_name("word")
    value = (string | number | bare).set_name("value")
    code = pp.Regex(r"[EW][0-9A-Z][0-9]{4}")
    code_range = pp.Group(code + pp.Suppress("..") + code).set_name("code range")
    value_list = pp.Group(
        pp.Suppress("[") + pp.Optional(pp.DelimitedList(value)) + pp.Suppress("]")
    ).set_name("[list]")

    def tail(expression: pp.ParserElement, op: str) -> pp.ParserElement:
        def action(text: str, loc: int, tokens: pp.ParseResults) -> Any:
            if op == "in":
                operand = tokens[0]
                if "range" in tokens:
                    return [("range", (operand[0], operand[1]), "")]
                return [("in", tuple(operand), "")]
            if op == "~":
                return [("~", (tokens[0],), tokens[1])]
            if op == "exists":
                return [("exists", (), "")]
            if op == "cmp":
                return [(tokens[0], (tokens[1],), "")]
            return [(op, (tokens[0],), "")]

        return expression.set_parse_action(action)

    regex = pp.Regex(r"/((?:[^/\\\n]|\\.)*)/([imsx]*)")
    regex.set_parse_action(lambda t: [t[0][1 : t[0].rindex("/")], t[0][t[0].rindex("/") + 1 :]])
    regex.set_name("/regex/")

    # `-` is pyparsing's error stop: once the left side matched, the right side must follow, and
    # a failure there is reported where it happened instead of after backtracking. It keeps
    # error positions exact, and the same across pyparsing versions.
    operator_tail = pp.MatchFirst(
        [
            tail(pp.Keyword("exists").suppress(), "exists"),
            tail(pp.Keyword("in").suppress() - (code_range("range") | value_list), "in"),
            tail(pp.Suppress("~") - regex, "~"),
            tail(pp.Keyword("contains").suppress() - value, "contains"),
            tail(pp.Keyword("startswith").suppress() - value, "startswith"),
            tail(pp.one_of("== != <= >= < >") - value, "cmp"),
        ]
    ).set_name("an operator (== != < <= > >= in ~ contains startswith exists)")

    def comparison_action(text: str, loc: int, tokens: pp.ParseResults) -> Comparison:
        op, values, flags = tokens[1]
        return Comparison(tokens[0], op, values, flags, _skip_space(text, loc))

    comparison = ((~keyword + field) - operator_tail).set_parse_action(comparison_action)
    comparison.set_name(_COMPARISON_HINT)

    def combine(kind: type[And] | type[Or]) -> Any:
        def action(text: str, loc: int, tokens: pp.ParseResults) -> Node:
            operands = tuple(tokens)
            return operands[0] if len(operands) == 1 else kind(operands, _skip_space(text, loc))

        return action

    def negate(text: str, loc: int, tokens: pp.ParseResults) -> Node:
        return Not(tokens[0], _skip_space(text, loc))

    expression = pp.Forward()
    expression.set_name("condition")
    group = pp.Suppress("(") - expression - pp.Suppress(")")
    unary = pp.Forward()
    unary.set_name(_COMPARISON_HINT)
    unary <<= (pp.Keyword("not").suppress() - unary).set_parse_action(negate) | comparison | group
    conjunction = (unary + pp.ZeroOrMore(pp.Keyword("and").suppress() - unary)).set_parse_action(
        combine(And)
    )
    disjunction = (
        conjunction + pp.ZeroOrMore(pp.Keyword("or").suppress() - conjunction)
    ).set_parse_action(combine(Or))
    expression <<= disjunction
    return expression


_COMPARISON_HINT = "a comparison such as 'log.level == ERROR'"


def _skip_space(text: str, loc: int) -> int:
    """The position of the first character that is not white space, at or after `loc`."""
    return loc + len(text[loc:]) - len(text[loc:].lstrip())


_CONDITION = _build()


def parse_condition(text: str) -> Node:
    """Parse a condition; raises ConditionSyntaxError with the line and column of the problem."""
    too_deep = _too_deep_at(text)
    if too_deep is not None:
        line = text.count("\n", 0, too_deep) + 1
        column = too_deep - (text.rfind("\n", 0, too_deep) + 1) + 1
        raise ConditionSyntaxError(
            f"nested deeper than {MAX_NESTING} (parentheses and 'not'): write it flatter, "
            "with 'and' and 'or' lists",
            line,
            column,
        )
    try:
        result = _CONDITION.parse_string(text, parse_all=True)
    except pp.ParseBaseException as error:
        line, column = error.lineno, error.col
        unclosed = _unclosed_parenthesis(text)
        if unclosed is not None:
            line = text.count("\n", 0, unclosed) + 1
            column = unclosed - (text.rfind("\n", 0, unclosed) + 1) + 1
        raise ConditionSyntaxError(_explain(text, error), line, column) from None
    node = result[0]
    assert isinstance(node, Comparison | Not | And | Or)
    return node


_WORD = re.compile(r"[A-Za-z0-9_@.\-:]+")
_QUOTED = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"?|'(?:[^'\\\n]|\\.)*'?")
_REGEX = re.compile(r"/(?:[^/\\\n]|\\.)*/?")


def _too_deep_at(text: str) -> int | None:
    """The offset where parentheses and `not`s nest deeper than MAX_NESTING, else None.

    Counted as the grammar nests: each '(' opens a level, and each `not` adds one to its level
    until the `and`/`or` that ends its operand; strings and regexes are skipped as the grammar
    reads them (a regex only right after `~`)."""
    levels = [0]  # the `not`s waiting in each open parenthesis (the outermost: none open)
    position, after_match = 0, False
    while position < len(text):
        character = text[position]
        if character.isspace():
            position += 1
            continue
        start, operator = position, after_match
        after_match = False
        if character in "\"'":
            position = _end(_QUOTED, text, position)
        elif character == "/" and operator:
            position = _end(_REGEX, text, position)
        elif character == "~":
            after_match = True
            position += 1
        elif character == "(":
            levels.append(0)
            position += 1
        elif character == ")":
            if len(levels) > 1:
                levels.pop()
            position += 1
        else:
            word = _WORD.match(text, position)
            if word is None:
                position += 1
                continue
            position = word.end()
            if word[0] == "not":
                levels[-1] += 1
            elif word[0] in ("and", "or"):
                levels[-1] = 0
        if len(levels) - 1 + sum(levels) > MAX_NESTING:
            return start
    return None


def _end(token: re.Pattern[str], text: str, position: int) -> int:
    found = token.match(text, position)
    return found.end() if found is not None else position + 1


def _unclosed_parenthesis(text: str) -> int | None:
    """The offset of the first '(' that is never closed (outside quotes and regexes)."""
    stack: list[int] = []
    quote = ""
    for offset, char in enumerate(text):
        if quote:
            if char == quote and text[offset - 1] != "\\":
                quote = ""
        elif char in "\"'/":
            quote = char
        elif char == "(":
            stack.append(offset)
        elif char == ")" and stack:
            stack.pop()
    return stack[0] if stack else None


def _explain(text: str, error: pp.ParseBaseException) -> str:
    rest = text[error.loc :]
    found = rest.split(None, 1)[0] if rest.strip() else ""
    where = f"found {found!r}" if found else "found the end of the condition"
    message = str(error.msg)
    dangling = re.search(r"\b(and|or|not)\s*$", text[: error.loc])
    if _unclosed_parenthesis(text) is not None:
        return "a '(' is not closed: expected ')'"
    if dangling is not None and not rest.strip():
        return f"expected {_COMPARISON_HINT} after '{dangling[1]}'"
    if message.startswith("Expected end of text"):
        return f"expected 'and', 'or' or the end of the condition, {where}"
    if "operations" in message or "condition" in message:
        return f"expected {_COMPARISON_HINT}, {where}"
    if message.startswith("Expected"):
        message = "expected " + message[len("Expected ") :]
    return f"{message}, {where}"
