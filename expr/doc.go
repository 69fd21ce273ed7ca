// Package expr is kshare's SQL expressions: it makes typed nodes of the
// grammar's expression trees (Compiler, over the statement's rewrite and a
// Scope that package query's planner gives it) and evaluates them on whole
// Arrow batches (Node.Eval), with kernels of this package (arithmetic and
// comparisons of numbers and times, which read mixed widths in place and
// check overflow per row; decimals, casts, LIKE, short-circuit AND/OR,
// conditionals that evaluate a branch only on its rows, the functions) and
// with arrow-go's compute functions for the rest. It owns the scalar
// functions (declared as data in funcs*.go) and Flink's type rules. It may
// import types (the types of expressions and their ranges), parse (the
// type names of CAST, the grammar's errors), render (values as text, and
// the readers its kernels use), options and the arithmetic of
// internal/calendar and internal/decimal; nothing that plans or runs a
// query, nor the catalog.
//
// Expressions: columns (metadata columns too, by their declared names; a
// ROW column's fields as r.field), literals (1, 1.5, 1e3, 'text', TRUE,
// NULL, x'0a', DATE '2024-01-02', TIME '12:00:00', TIMESTAMP '2024-01-02
// 03:04:05.678'), + - * / %, unary -, = <> != < <= > >=, AND OR NOT, IS
// [NOT] NULL, IS [NOT] TRUE, IS [NOT] FALSE, IS [NOT] UNKNOWN (of a
// BOOLEAN: IS [NOT] NULL), [NOT] IN (...), [NOT] BETWEEN,
// [NOT] LIKE [ESCAPE], CAST(x AS <type>) and TRY_CAST(x AS <type>) with
// Flink's type names, CASE (simple and searched), string || string,
// t + INTERVAL 'n' unit and compound intervals (INTERVAL '1:30' HOUR TO
// MINUTE, '1 02:03:04.5' DAY TO SECOND, '1-2' YEAR TO MONTH: months are
// added first, then the rest), arr[i], m['key'], and the scalar functions that
// Functions lists (SHOW FUNCTIONS), by group:
//
//	conditional  COALESCE IFNULL NULLIF IF GREATEST LEAST
//	strings      CONCAT CONCAT_WS UPPER LOWER INITCAP TRIM LTRIM RTRIM
//	             CHAR_LENGTH SUBSTRING SUBSTR POSITION REPLACE LPAD RPAD
//	             SPLIT_INDEX REGEXP REGEXP_EXTRACT REGEXP_REPLACE
//	numbers      MOD ABS SIGN ROUND TRUNCATE FLOOR CEIL POWER SQRT LN LOG10 EXP
//	time         CURRENT_TIMESTAMP NOW LOCALTIMESTAMP CURRENT_DATE CURRENT_TIME
//	             EXTRACT YEAR .. SECOND FLOOR/CEIL(t TO unit) TIMESTAMPADD
//	             TIMESTAMPDIFF DATE_FORMAT TO_TIMESTAMP TO_DATE UNIX_TIMESTAMP
//	             FROM_UNIXTIME TO_TIMESTAMP_LTZ
//	JSON         JSON_VALUE [RETURNING type] [ON EMPTY] [ON ERROR]
//	             JSON_QUERY JSON_EXISTS
//	nested       CARDINALITY
//
// Each function is declared once, as data (funcs*.go): its argument kinds,
// its result type rule (Flink's), its kernel over whole arrays. A call of an
// unknown function suggests a known one; an argument of the wrong type is
// named by its position with the types the function accepts.
//
// # Types
//
// A column keeps its declared type; an expression's type is derived as Flink
// derives it: INT + INT is INT, INT + BIGINT is BIGINT, INT / INT is INT
// (truncating), anything with DOUBLE is DOUBLE, integer % integer has the
// divisor's type; DECIMAL arithmetic follows Flink's precision and scale
// rules (for + - * / %; see arithType) and rounds half away from zero.
// Comparisons and IS tests are BOOLEAN. A result is NOT NULL only if its
// operands are. A string literal compared with a number, a time or a
// BOOLEAN is read as that type (ts > '2024-01-01 00:00:00').
//
// Where kshare and Flink differ, kshare refuses to give a wrong number:
//
//   - Integer overflow (INT + INT beyond 2^31) is an error; Flink wraps
//     around. DECIMAL overflow is an error; Flink gives NULL.
//   - Division (and %) by zero of exact numbers is an error, as in Flink;
//     FLOAT and DOUBLE divide to Infinity or NaN, as in Flink.
//   - CAST of a value that does not fit its target is an error, as in Flink
//     since 1.15; TRY_CAST gives NULL instead. Casts to integers truncate
//     toward zero; casts to a shorter DECIMAL scale round half away from
//     zero; casts to a lower time precision truncate.
//   - TIMESTAMP_LTZ values are read and shown in UTC, kshare's session time
//     zone.
//   - LIKE has no default escape character (standard SQL, and Flink since
//     FLINK-39424); write ESCAPE '\' to get one.
//
// Functions, where kshare and Flink differ or where Flink leaves a choice:
//
//   - CASE, COALESCE, IF and the like evaluate a branch only on the rows
//     that take it (as Flink's generated code does), so CASE WHEN qty <> 0
//     THEN price / qty END does not divide by zero. Their common type is
//     Flink's, except that strings of different lengths are a VARCHAR (no
//     CHAR padding).
//   - CURRENT_TIMESTAMP and the other current-time functions are read once
//     per batch (Flink's streaming mode: per record) and never folded
//     into a constant at planning.
//   - Regular expressions are Go's (RE2): no backreferences or lookaround;
//     a constant pattern is compiled at planning, and a bad pattern is an
//     error there (a pattern from a column: an error when it is met, where
//     Flink gives NULL). A bad JSON path or date pattern likewise.
//   - UPPER and LOWER map case as Java's String.toUpperCase and
//     toLowerCase do in Flink: by Unicode's full case mapping, so a German
//     sharp s becomes SS and a result may have more characters than its
//     argument; as under any JVM locale but Turkish, Azeri and Lithuanian.
//   - Positions and lengths (SUBSTRING, CHAR_LENGTH, LPAD) count Unicode
//     code points, as Flink's own strings do.
//   - An integer function result beyond its type (ABS of the smallest INT,
//     ROUND(2147483647, -1)) is an error; Flink wraps around.
//   - Date patterns are Java's letters y M d H h m s S a E D; others are
//     refused.
//   - arr[i] and m['key'] are NULL for an index out of range or a missing
//     key.
//   - EXTRACT's MILLISECOND, MICROSECOND and NANOSECOND are the fraction of
//     the second, as Flink's (not PostgreSQL's seconds with it); EPOCH is
//     whole seconds, cut toward zero as Flink cuts.
//   - FLOOR(t TO WEEK) is the Sunday before, as in Flink; CEIL(t TO unit)
//     is t itself when t is on a boundary, the next boundary otherwise
//     (Flink's CEIL of a time within a boundary day can give that day).
//   - A JSON path with a wildcard (.* or [*]) finds the JSON array of what
//     it reaches, as Flink's Jayway JsonPath does: JSON_QUERY gives it,
//     JSON_VALUE finds no scalar, and JSON_EXISTS is TRUE even when it is
//     empty ('$.items[*].nope'). A path without lax is strict, as in
//     Flink, which matters to ON EMPTY and ON ERROR.
//   - JSON_VALUE's RETURNING type is part of the call: a value that is not
//     of it meets ON ERROR (NULL unless the clause says otherwise).
//
// NULL is three-valued logic throughout: NULL AND FALSE is FALSE, NULL OR
// TRUE is TRUE, x IN (1, NULL) is NULL when x is not 1, a WHERE that is NULL
// drops the row. The right side of AND is evaluated only on rows the left
// side does not make FALSE (of OR: not TRUE), so WHERE qty <> 0 AND
// price / qty > 2 does not divide by zero.
package expr
