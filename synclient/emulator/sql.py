"""The table query language the emulator understands: a validated subset of Synapse SQL.

Nothing a client writes is ever handed to SQLite. ``parse`` tokenizes the text itself and accepts only::

    SELECT [DISTINCT] * | COUNT(*) | col [, col ...]
    FROM synN
    [WHERE cond]            cond: col = <> != < > <= >= literal | col [NOT] IN (literal, ...)
                                  | col [NOT] LIKE 'pattern' | col IS [NOT] NULL | col [NOT] BETWEEN lit AND lit
                                  | NOT cond | cond AND cond | cond OR cond | (cond)
    [ORDER BY col [ASC|DESC] [, ...]]
    [LIMIT n [OFFSET m]]

Columns are plain or double-quoted identifiers (``"col ""x"" name"``) naming a column of the table; literals are
single-quoted strings (``''`` inside), numbers (optionally negative), TRUE, FALSE. Anything else (a ``;``,
comments, subqueries, joins, functions, other tables, unknown columns) is a ``QueryError``, which the routes
answer as Synapse does (400, ErrorResponse). ``build`` turns a parsed query into one SQLite statement over
``row_table`` whose column names are generated (``c0``, ``c1``, ...) and whose literals are all parameters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Tuple, Union

KEYWORDS = frozenset(
    {
        "SELECT",
        "DISTINCT",
        "FROM",
        "WHERE",
        "AND",
        "OR",
        "NOT",
        "IN",
        "LIKE",
        "IS",
        "NULL",
        "ORDER",
        "BY",
        "ASC",
        "DESC",
        "LIMIT",
        "OFFSET",
        "TRUE",
        "FALSE",
        "COUNT",
        "BETWEEN",
    }
)
COMPARISONS = ("=", "<>", "!=", "<=", ">=", "<", ">")
_TABLE_REF = re.compile(r"^syn(\d+)$", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
ROW_TABLE = "row_table"


class QueryError(ValueError):
    """The query is not one the emulator runs; the message says why (it becomes the 400's reason)."""


@dataclass(frozen=True)
class Token:
    kind: str  # "word", "ident" (quoted identifier), "string", "number", "op", "end"
    text: str
    position: int

    def is_keyword(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words


def tokenize(sql: str) -> List[Token]:
    tokens: List[Token] = []
    index = 0
    length = len(sql)
    while index < length:
        char = sql[index]
        if char.isspace():
            index += 1
        elif sql.startswith("--", index) or sql.startswith("/*", index) or char == "#":
            raise QueryError(f"Comments are not allowed in a query (at character {index + 1}).")
        elif char == ";":
            raise QueryError(f"A query is one statement: ';' is not allowed (at character {index + 1}).")
        elif char in ("'", '"'):
            text, index = _quoted(sql, index, char)
            tokens.append(Token("string" if char == "'" else "ident", text, index))
        elif char.isdigit():
            match = _NUMBER.match(sql, index)
            if match is None:  # a letter or digit outside ASCII (str.isalpha/isdigit take any script)
                raise QueryError(f"Unexpected character {char!r} at character {index + 1}.")
            tokens.append(Token("number", match.group(0), index))
            index = match.end()
        elif char.isalpha() or char == "_":
            match = _WORD.match(sql, index)
            if match is None:  # a letter or digit outside ASCII (str.isalpha/isdigit take any script)
                raise QueryError(f"Unexpected character {char!r} at character {index + 1}.")
            word = match.group(0)
            index = match.end()
            if index < length and sql[index] == "." and _TABLE_REF.match(word):
                raise QueryError(f"Queries of a table version ({word}.N) are not supported by the emulator.")
            tokens.append(Token("word", word, match.start()))
        else:
            two = sql[index : index + 2]
            if two in ("<>", "!=", "<=", ">="):
                tokens.append(Token("op", two, index))
                index += 2
            elif char in "=<>(),*-":
                tokens.append(Token("op", char, index))
                index += 1
            else:
                raise QueryError(f"Unexpected character {char!r} at character {index + 1}.")
    tokens.append(Token("end", "", length))
    return tokens


def _quoted(sql: str, start: int, quote: str) -> Tuple[str, int]:
    """The text of a quoted string or identifier (a doubled quote stands for one) and the index after it."""
    parts = []
    index = start + 1
    while True:
        end = sql.find(quote, index)
        if end < 0:
            kind = "string" if quote == "'" else "identifier"
            raise QueryError(f"Unterminated quoted {kind} starting at character {start + 1}.")
        parts.append(sql[index:end])
        if sql.startswith(quote * 2, end):
            parts.append(quote)
            index = end + 2
            continue
        return "".join(parts), end + 1


Literal = Union[str, int, float, bool]


@dataclass(frozen=True)
class Comparison:
    column: str
    operator: str  # one of COMPARISONS
    value: Literal


@dataclass(frozen=True)
class InList:
    column: str
    values: Tuple[Literal, ...]
    negated: bool


@dataclass(frozen=True)
class Like:
    column: str
    pattern: str
    negated: bool


@dataclass(frozen=True)
class IsNull:
    column: str
    negated: bool


@dataclass(frozen=True)
class Between:
    column: str
    low: Literal
    high: Literal
    negated: bool


@dataclass(frozen=True)
class Not:
    operand: Condition


@dataclass(frozen=True)
class Junction:
    operator: str  # "AND" or "OR"
    operands: Tuple[Condition, ...]


Condition = Union[Comparison, InList, Like, IsNull, Between, Not, Junction]


@dataclass
class Query:
    table_id: int
    #: selected column names; empty with ``count`` (SELECT COUNT(*))
    columns: List[str] = field(default_factory=list)
    star: bool = False
    count: bool = False
    distinct: bool = False
    where: Optional[Condition] = None
    order: List[Tuple[str, bool]] = field(default_factory=list)  # (column, ascending)
    limit: Optional[int] = None
    offset: Optional[int] = None

    @property
    def is_aggregate(self) -> bool:
        """Rows that stand for no single table row (COUNT, DISTINCT): no ROW_ID / ROW_VERSION."""
        return self.count or self.distinct


class _Parser:
    def __init__(self, sql: str, known: Sequence[str]) -> None:
        self.tokens = tokenize(sql)
        self.index = 0
        self.known = set(known)

    @property
    def token(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def fail(self, expected: str) -> QueryError:
        token = self.token
        found = "the end of the query" if token.kind == "end" else repr(token.text)
        return QueryError(f"Expected {expected} but found {found} at character {token.position + 1}.")

    def keyword(self, *words: str) -> bool:
        if self.token.is_keyword(*words):
            self.advance()
            return True
        return False

    def expect_keyword(self, word: str) -> None:
        if not self.keyword(word):
            raise self.fail(word)

    def op(self, text: str) -> bool:
        if self.token.kind == "op" and self.token.text == text:
            self.advance()
            return True
        return False

    def expect_op(self, text: str) -> None:
        if not self.op(text):
            raise self.fail(repr(text))

    def column(self) -> str:
        token = self.token
        if token.kind == "ident" or (token.kind == "word" and token.text.upper() not in KEYWORDS):
            following = self.tokens[self.index + 1]
            if token.kind == "word" and following.kind == "op" and following.text == "(":
                raise QueryError(f"Functions are not supported: {token.text}(...)")
            self.advance()
            if token.text not in self.known:
                raise QueryError(f"Column '{token.text}' does not exist in this table or view.")
            return token.text
        if token.kind == "word" and token.text.upper() == "SELECT":
            raise QueryError("Subqueries are not supported.")
        raise self.fail("a column name")

    def literal(self) -> Literal:
        token = self.token
        negative = False
        if token.kind == "op" and token.text == "-":
            self.advance()
            negative = True
            token = self.token
            if token.kind != "number":
                raise self.fail("a number after '-'")
        if token.kind == "string":
            self.advance()
            return token.text
        if token.kind == "number":
            self.advance()
            value = float(token.text) if any(c in token.text for c in ".eE") else int(token.text)
            return -value if negative else value
        if token.is_keyword("TRUE", "FALSE"):
            self.advance()
            return token.text.upper() == "TRUE"
        if token.is_keyword("SELECT") or (
            token.kind == "op" and token.text == "(" and self.tokens[self.index + 1].is_keyword("SELECT")
        ):
            raise QueryError("Subqueries are not supported.")
        raise self.fail("a literal (a quoted string, a number, TRUE or FALSE)")

    def count_star(self) -> bool:
        if self.token.is_keyword("COUNT") and self.tokens[self.index + 1].text == "(":
            self.advance()
            self.expect_op("(")
            self.expect_op("*")
            self.expect_op(")")
            return True
        return False

    def integer(self, what: str) -> int:
        token = self.token
        if token.kind != "number" or not token.text.isdigit():
            raise self.fail(f"a non-negative whole number after {what}")
        self.advance()
        return int(token.text)

    def parse(self) -> Query:
        self.expect_keyword("SELECT")
        distinct = self.keyword("DISTINCT")
        star = count = False
        columns: List[str] = []
        if self.op("*"):
            star = True
        elif self.count_star():
            count = True
        else:
            columns.append(self.column())
            while self.op(","):
                columns.append(self.column())
        self.expect_keyword("FROM")
        table = self.token
        match = _TABLE_REF.match(table.text) if table.kind == "word" else None
        if not match:
            if table.kind == "op" and table.text == "(":
                raise QueryError("Subqueries are not supported.")
            raise self.fail("a table or view id (synN)")
        self.advance()
        query = Query(int(match.group(1)), columns, star, count, distinct)
        if self.token.kind == "word" and self.token.text.upper() not in KEYWORDS | {"GROUP"}:
            raise QueryError(f"Only one table or view per query: unexpected {self.token.text!r} after {table.text}.")
        if self.keyword("WHERE"):
            query.where = self.condition()
        if self.keyword("ORDER"):
            self.expect_keyword("BY")
            query.order.append(self.order_item())
            while self.op(","):
                query.order.append(self.order_item())
        if self.keyword("LIMIT"):
            query.limit = self.integer("LIMIT")
            if self.keyword("OFFSET"):
                query.offset = self.integer("OFFSET")
        if self.token.kind != "end":
            if self.token.kind == "op" and self.token.text == ",":
                raise QueryError("Only one table or view per query: joins are not supported.")
            raise self.fail("the end of the query")
        return query

    def order_item(self) -> Tuple[str, bool]:
        column = self.column()
        if self.keyword("DESC"):
            return column, False
        self.keyword("ASC")
        return column, True

    def condition(self) -> Condition:
        operands = [self.conjunction()]
        while self.keyword("OR"):
            operands.append(self.conjunction())
        return operands[0] if len(operands) == 1 else Junction("OR", tuple(operands))

    def conjunction(self) -> Condition:
        operands = [self.negation()]
        while self.keyword("AND"):
            operands.append(self.negation())
        return operands[0] if len(operands) == 1 else Junction("AND", tuple(operands))

    def negation(self) -> Condition:
        if self.keyword("NOT"):
            return Not(self.negation())
        if self.op("("):
            if self.token.is_keyword("SELECT"):
                raise QueryError("Subqueries are not supported.")
            inner = self.condition()
            self.expect_op(")")
            return inner
        return self.predicate()

    def predicate(self) -> Condition:
        column = self.column()
        token = self.token
        if token.kind == "op" and token.text in COMPARISONS:
            self.advance()
            return Comparison(column, "<>" if token.text == "!=" else token.text, self.literal())
        if self.keyword("IS"):
            negated = self.keyword("NOT")
            self.expect_keyword("NULL")
            return IsNull(column, negated)
        negated = self.keyword("NOT")
        if self.keyword("IN"):
            self.expect_op("(")
            values = [self.literal()]
            while self.op(","):
                values.append(self.literal())
            self.expect_op(")")
            return InList(column, tuple(values), negated)
        if self.keyword("LIKE"):
            pattern = self.literal()
            if not isinstance(pattern, str):
                raise QueryError("LIKE needs a quoted string pattern.")
            return Like(column, pattern, negated)
        if self.keyword("BETWEEN"):
            low = self.literal()
            self.expect_keyword("AND")
            return Between(column, low, self.literal(), negated)
        raise self.fail("a comparison (=, <>, !=, <, >, <=, >=, IN, LIKE, BETWEEN or IS NULL)")


def parse(sql: str, known_columns: Sequence[str]) -> Query:
    """The validated query, or ``QueryError``. ``known_columns``: the names a query may use."""
    if not isinstance(sql, str) or not sql.strip():
        raise QueryError("The query is empty.")
    return _Parser(sql, known_columns).parse()


def table_id_of(sql: str) -> Optional[int]:
    """The numeric id after FROM, without validating the rest (None when there is none)."""
    try:
        tokens = tokenize(sql)
    except QueryError:
        return None
    for index, token in enumerate(tokens[:-1]):
        if token.is_keyword("FROM"):
            match = _TABLE_REF.match(tokens[index + 1].text)
            return int(match.group(1)) if match else None
    return None


def build(
    query: Query, names: Sequence[str], convert: Callable[[str, Literal], object]
) -> Tuple[str, List[object], List[int]]:
    """(SQLite statement over ROW_TABLE, its parameters, the selected column indexes).

    ``names`` are the table's column names in order (column i is SQLite column ``c{i}``); ``convert(name, literal)``
    turns a literal into the value stored for that column (or raises QueryError). The statement selects
    ``row_id, row_version, row_etag`` and then the selected columns (``COUNT(*)`` alone for a count)."""
    index = {name: position for position, name in enumerate(names)}
    params: List[object] = []
    selected = list(range(len(names))) if query.star else [index[name] for name in query.columns]

    def sql_of(condition: Condition) -> str:
        if isinstance(condition, Junction):
            return "(" + f" {condition.operator} ".join(sql_of(c) for c in condition.operands) + ")"
        if isinstance(condition, Not):
            return f"(NOT {sql_of(condition.operand)})"
        column = f"c{index[condition.column]}"
        if isinstance(condition, Comparison):
            params.append(convert(condition.column, condition.value))
            return f"({column} {condition.operator} ?)"
        if isinstance(condition, InList):
            params.extend(convert(condition.column, value) for value in condition.values)
            marks = ", ".join("?" * len(condition.values))
            return f"({column} {'NOT IN' if condition.negated else 'IN'} ({marks}))"
        if isinstance(condition, Like):
            params.append(condition.pattern)
            return f"({column} {'NOT LIKE' if condition.negated else 'LIKE'} ?)"
        if isinstance(condition, Between):
            params.extend((convert(condition.column, condition.low), convert(condition.column, condition.high)))
            return f"({column} {'NOT BETWEEN' if condition.negated else 'BETWEEN'} ? AND ?)"
        return f"({column} IS {'NOT NULL' if condition.negated else 'NULL'})"

    if query.count:
        head = "SELECT NULL, NULL, NULL, COUNT(*)"
    else:
        columns = ", ".join(f"c{i}" for i in selected)
        head = (
            f"SELECT DISTINCT NULL, NULL, NULL, {columns}"
            if query.distinct
            else f"SELECT row_id, row_version, row_etag, {columns}"
        )
    statement = f"{head} FROM {ROW_TABLE}"
    if query.where is not None:
        statement += " WHERE " + sql_of(query.where)
    if not query.count:
        order = [f"c{index[name]} {'ASC' if ascending else 'DESC'}" for name, ascending in query.order]
        if not query.distinct:
            order.append("row_id ASC")  # Synapse's default order; a stable tie-break after the query's own
        if order:
            statement += " ORDER BY " + ", ".join(order)
    if query.limit is not None or query.offset is not None:
        statement += " LIMIT ? OFFSET ?"
        params.extend((-1 if query.limit is None else query.limit, query.offset or 0))
    return statement, params, selected
