package expr

// This file holds the string functions. Positions and lengths count
// characters (Unicode code points, as Flink's BinaryStringData does), from 1.
// Regular expressions are Go's (RE2): Java's lookaround and backreferences
// are refused when the pattern is compiled; a constant pattern is compiled
// once, when the query is planned.

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"golang.org/x/text/transform"

	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

func init() {
	register(
		&funcDef{name: "CONCAT", args: []argKind{strArg}, variadic: true,
			desc: "the arguments joined; NULL if any is NULL", ret: concatType(false), eval: concat},
		&funcDef{name: "CONCAT_WS", args: []argKind{strArg, strArg}, variadic: true,
			desc: "the arguments after the first joined with the first between them, skipping NULLs; NULL if the separator is NULL",
			ret:  concatWSType, eval: concatWS},
		&funcDef{name: "UPPER", args: []argKind{strArg}, desc: "the string in upper case, by Unicode's full case mapping as Java's (a German sharp s becomes SS)",
			ret: sameAsArg(0), eval: caseMapper(&upperASCII, cases.Upper)},
		&funcDef{name: "LOWER", args: []argKind{strArg}, desc: "the string in lower case, by Unicode's full case mapping as Java's (a capital sigma that ends a word becomes the final sigma)",
			ret: sameAsArg(0), eval: caseMapper(&lowerASCII, cases.Lower)},
		&funcDef{name: "INITCAP", args: []argKind{strArg},
			desc: "the string with the first letter of each word (a run of ASCII letters and digits) in upper case, the rest in lower case",
			ret:  sameAsArg(0), eval: initcap},
		&funcDef{name: "TRIM", args: []argKind{strArg, strArg}, min: 1, sig: "TRIM([BOTH | LEADING | TRAILING] [STRING] FROM STRING), TRIM(STRING[, STRING])",
			desc: "the string without the characters of the second argument (default: space) at both ends; also TRIM([BOTH | LEADING | TRAILING] [chars] FROM s)",
			ret:  varyingArg(0), eval: trimmer(strings.Trim)},
		&funcDef{name: "LTRIM", args: []argKind{strArg, strArg}, min: 1,
			desc: "the string without the characters of the second argument (default: space) at its start",
			ret:  varyingArg(0), eval: trimmer(strings.TrimLeft)},
		&funcDef{name: "RTRIM", args: []argKind{strArg, strArg}, min: 1,
			desc: "the string without the characters of the second argument (default: space) at its end",
			ret:  varyingArg(0), eval: trimmer(strings.TrimRight)},
		&funcDef{name: "CHAR_LENGTH", args: []argKind{strArg}, desc: "the number of characters",
			ret: fixedType(types.IntType()), eval: charLength},
		&funcDef{name: "CHARACTER_LENGTH", args: []argKind{strArg}, desc: "the number of characters, as CHAR_LENGTH",
			ret: fixedType(types.IntType()), eval: charLength},
		&funcDef{name: "SUBSTRING", args: []argKind{strArg, intArg, intArg}, min: 2, sig: "SUBSTRING(STRING FROM INTEGER [FOR INTEGER]), SUBSTRING(STRING, INTEGER[, INTEGER])",
			desc: "the characters from position i (from 1; negative: from the end) on, n of them if given; also SUBSTRING(s FROM i [FOR n])",
			ret:  substringType, eval: substring},
		&funcDef{name: "SUBSTR", args: []argKind{strArg, intArg, intArg}, min: 2,
			desc: "SUBSTRING(s, i[, n])", ret: substringType, eval: substring},
		&funcDef{name: "POSITION", args: []argKind{strArg, strArg}, sig: "POSITION(STRING IN STRING)",
			desc: "the position (from 1) of the first string in the second, 0 if absent; written POSITION(a IN b)",
			ret:  fixedType(types.IntType()), eval: position},
		&funcDef{name: "REPLACE", args: []argKind{strArg, strArg, strArg},
			desc: "the first string with every occurrence of the second replaced by the third",
			ret:  fixedType(types.StringType()), eval: replace},
		&funcDef{name: "LPAD", args: []argKind{strArg, intArg, strArg},
			desc: "the string padded at its start with the third argument, or cut, to the length given; NULL for a negative length or an empty pad",
			ret:  nullableType(types.StringType()), eval: padder(true)},
		&funcDef{name: "RPAD", args: []argKind{strArg, intArg, strArg},
			desc: "the string padded at its end with the third argument, or cut, to the length given; NULL for a negative length or an empty pad",
			ret:  nullableType(types.StringType()), eval: padder(false)},
		&funcDef{name: "SPLIT_INDEX", args: []argKind{strArg, strArg, intArg},
			desc: "the field at index n (from 0) of the string split at the separator; NULL if there is none",
			ret:  nullableType(types.StringType()), eval: splitIndex},
		&funcDef{name: "REGEXP", args: []argKind{strArg, strArg},
			desc: "whether some part of the string matches the regular expression",
			ret:  fixedType(types.BooleanType()), prep: compilePattern(1), eval: regexpMatch},
		&funcDef{name: "REGEXP_EXTRACT", args: []argKind{strArg, strArg, intArg}, min: 2,
			desc: "group n (default 0, the whole match) of the first match of the regular expression; NULL if none",
			ret:  nullableType(types.StringType()), prep: compilePattern(1), eval: regexpExtract},
		&funcDef{name: "REGEXP_REPLACE", args: []argKind{strArg, strArg, strArg},
			desc: "the string with every match of the regular expression replaced by the third argument, taken literally",
			ret:  fixedType(types.StringType()), prep: compilePattern(1), eval: regexpReplace},
	)
}

// nullableType is t, NULL for some values whatever the arguments.
func nullableType(t *types.DataType) func(c *call) (*types.DataType, error) {
	return func(*call) (*types.DataType, error) { return t.WithNotNull(false), nil }
}

// concatType is a string as long as the arguments together: CHAR if all are
// CHAR and chars is set (Flink's ||), else VARCHAR; NULL if any is.
func concatType(chars bool) func(c *call) (*types.DataType, error) {
	return func(c *call) (*types.DataType, error) {
		t := &types.DataType{Kind: types.Char, NotNull: notNull(c.args...)}
		for _, a := range c.args {
			t.Length = min(t.Length+a.Type().Length, types.MaxLength)
			if a.Type().Kind != types.Char || !chars {
				t.Kind = types.Varchar
			}
		}
		return t, nil
	}
}

// concatWSType is a VARCHAR long enough for every argument and the
// separators between them; NULL only if the separator is.
func concatWSType(c *call) (*types.DataType, error) {
	n := int64(c.args[0].Type().Length) * int64(len(c.args)-2)
	for _, a := range c.args[1:] {
		n += int64(a.Type().Length)
	}
	return &types.DataType{Kind: types.Varchar, Length: int(min(max(n, 1), types.MaxLength)), NotNull: c.args[0].Type().NotNull}, nil
}

// substringType is a VARCHAR of the string's length; with a length
// argument that is not a constant >= 0 it may be NULL (a negative length
// gives NULL, as in Flink).
func substringType(c *call) (*types.DataType, error) {
	t := &types.DataType{Kind: types.Varchar, Length: c.args[0].Type().Length, NotNull: notNull(c.args...)}
	if len(c.args) == 3 {
		lit, ok := c.args[2].(*literal)
		if ok {
			n, valid := literalInt(lit)
			ok = valid && n >= 0
		}
		t.NotNull = t.NotNull && ok
	}
	return t, nil
}

// literalInt is the value of an integer literal; ok is false for NULL.
func literalInt(l *literal) (v int64, ok bool) {
	if !l.val.IsValid() {
		return 0, false
	}
	a, err := scalar.MakeArrayFromScalar(l.val, 1, foldMem)
	if err != nil {
		return 0, false
	}
	defer a.Release()
	return render.IntReader(a)(0), true
}

// rowsOf is eachRow for a call's result.
func rowsOf[B array.Builder](ec *EvalCtx, c *call, as []arrow.Array, f func(b B, i int) error) (arrow.Array, error) {
	return eachRow(ec.mem, c.t.ArrowType(), as, f)
}

// strs reads the arguments that are strings; others are nil.
func strs(as []arrow.Array) []*array.String {
	out := make([]*array.String, len(as))
	for k, a := range as {
		out[k], _ = a.(*array.String)
	}
	return out
}

func concat(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	ss := strs(as)
	var buf []byte
	return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
		buf = buf[:0]
		for _, s := range ss {
			buf = append(buf, s.Value(i)...)
		}
		b.BinaryBuilder.Append(buf)
		return nil
	})
}

func concatWS(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	ss := strs(as)
	var buf []byte
	// Only the separator makes the result NULL.
	return rowsOf(ec, c, as[:1], func(b *array.StringBuilder, i int) error {
		buf = buf[:0]
		first := true
		for _, s := range ss[1:] {
			if s.IsNull(i) {
				continue
			}
			if !first {
				buf = append(buf, ss[0].Value(i)...)
			}
			first = false
			buf = append(buf, s.Value(i)...)
		}
		b.BinaryBuilder.Append(buf)
		return nil
	})
}

var upperASCII, lowerASCII [256]byte

func init() {
	for i := range 256 {
		upperASCII[i], lowerASCII[i] = byte(i), byte(i)
		if i >= 'a' && i <= 'z' {
			upperASCII[i] = byte(i) - 'a' + 'A'
		}
		if i >= 'A' && i <= 'Z' {
			lowerASCII[i] = byte(i) - 'A' + 'a'
		}
	}
}

// caseMapper is UPPER or LOWER. ASCII text (the common case) is mapped byte
// by byte into a new value buffer that shares the input's offsets and
// validity. Other text is mapped as Flink maps it, by Java's
// String.toUpperCase and toLowerCase: Unicode's full case mapping, with
// SpecialCasing's mappings that are not the language's (the sharp s is SS,
// the fi ligature FI, the dotted capital I lowers to i and a combining dot,
// a capital sigma that ends a word to the final sigma), where Go's
// unicode.ToUpper maps one character to one. So the result may have
// more characters than its argument, as in Flink. A JVM whose default
// locale is Turkish, Azeri or Lithuanian maps a few letters differently;
// kshare maps as any other locale does.
func caseMapper(ascii *[256]byte, caser func(language.Tag, ...cases.Option) cases.Caser) func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	return func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
		s := as[0].(*array.String)
		if out, ok := mapASCII(ec.mem, s, ascii); ok {
			return out, nil
		}
		// A Caser keeps state between calls: one per evaluation, reset per
		// value. The batch's ASCII values are still mapped byte by byte.
		m := caser(language.Und)
		var t transform.Transformer = &m // boxed once, not per value
		vals, offs := s.ValueBytes(), s.ValueOffsets()
		var buf []byte
		return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
			v := vals[offs[i]-offs[0] : offs[i+1]-offs[0]]
			if !isASCIIBytes(v) {
				var err error
				if buf, _, err = transform.Append(t, buf[:0], v); err != nil {
					return Errorf(ErrEval, "%s cannot map the case of %q: %v", c.src, v, err)
				}
				b.BinaryBuilder.Append(buf)
				return nil
			}
			buf = buf[:0]
			for _, ch := range v {
				buf = append(buf, ascii[ch])
			}
			b.BinaryBuilder.Append(buf)
			return nil
		})
	}
}

func isASCIIBytes(v []byte) bool {
	for _, c := range v {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// mapASCII maps every byte of s's values through m; ok is false (and
// nothing is allocated that is kept) if some value is not ASCII.
func mapASCII(mem memory.Allocator, s *array.String, m *[256]byte) (arrow.Array, bool) {
	d := s.Data()
	if s.Len() == 0 || d.Buffers()[2] == nil {
		return nil, false
	}
	offs := s.ValueOffsets()
	lo, hi := int(offs[0]), int(offs[len(offs)-1])
	src := d.Buffers()[2].Bytes()
	vals := memory.NewResizableBuffer(mem)
	defer vals.Release()
	vals.Resize(len(src))
	dst := vals.Bytes()
	var or byte
	for k := lo; k < hi; k++ {
		c := src[k]
		or |= c
		dst[k] = m[c]
	}
	if or >= utf8.RuneSelf {
		return nil, false
	}
	nd := array.NewData(d.DataType(), d.Len(), []*memory.Buffer{d.Buffers()[0], d.Buffers()[1], vals}, nil, d.NullN(), d.Offset())
	defer nd.Release()
	return array.MakeFromData(nd), true
}

func isAlnumASCII(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// initcap follows Flink (Calcite's INITCAP): a word is a run of ASCII
// letters and digits; anything else, other letters included, ends one and
// is kept as it is.
func initcap(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	s := as[0].(*array.String)
	var buf []byte
	return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
		buf = append(buf[:0], s.Value(i)...)
		start := true
		for k, ch := range buf {
			switch {
			case !isAlnumASCII(ch):
				start = true
			case start:
				buf[k], start = upperASCII[ch], false
			default:
				buf[k] = lowerASCII[ch]
			}
		}
		b.BinaryBuilder.Append(buf)
		return nil
	})
}

// trimmer is TRIM, LTRIM or RTRIM with the characters to remove (a space
// if not given).
func trimmer(trim func(s, cutset string) string) func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	return func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
		ss := strs(as)
		cut := func(int) string { return " " }
		if len(ss) == 2 {
			cut = ss[1].Value
		}
		return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
			b.Append(trim(ss[0].Value(i), cut(i)))
			return nil
		})
	}
}

func charLength(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	s := as[0].(*array.String)
	return rowsOf(ec, c, as, func(b *array.Int32Builder, i int) error {
		b.UnsafeAppend(int32(utf8.RuneCountInString(s.Value(i))))
		return nil
	})
}

// substring follows Flink: position 0 is 1, a negative position counts from
// the end, a position past the end gives ”, a negative length NULL.
func substring(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	s := as[0].(*array.String)
	pos := render.IntReader(as[1])
	length := func(int) int64 { return types.MaxLength }
	if len(as) == 3 {
		length = render.IntReader(as[2])
	}
	return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
		v, p, n := s.Value(i), pos(i), length(i)
		if n < 0 {
			b.AppendNull()
			return nil
		}
		chars := int64(utf8.RuneCountInString(v))
		var start int64
		switch {
		case p > 0:
			start = p - 1
		case p < 0:
			start = chars + p
		}
		if start < 0 || start >= chars {
			b.Append("")
			return nil
		}
		end := min(chars, start+n)
		b.Append(v[runeOffset(v, start):runeOffset(v, end)])
		return nil
	})
}

// runeOffset is the byte offset of character k of s (len(s) past the end).
func runeOffset(s string, k int64) int {
	for off := range s {
		if k == 0 {
			return off
		}
		k--
	}
	return len(s)
}

func position(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	ss := strs(as)
	return rowsOf(ec, c, as, func(b *array.Int32Builder, i int) error {
		in := ss[1].Value(i)
		k := strings.Index(in, ss[0].Value(i))
		if k < 0 {
			b.UnsafeAppend(0)
		} else {
			b.UnsafeAppend(int32(utf8.RuneCountInString(in[:k]) + 1))
		}
		return nil
	})
}

func replace(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	ss := strs(as)
	return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
		b.Append(strings.ReplaceAll(ss[0].Value(i), ss[1].Value(i), ss[2].Value(i)))
		return nil
	})
}

// padder is LPAD (left) or RPAD, as Flink: the string cut to the length, or
// padded with as much of the pad repeated as fits.
func padder(left bool) func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	return func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
		ss := strs(as)
		length := render.IntReader(as[1])
		var buf []rune
		return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
			n, pad := length(i), []rune(ss[2].Value(i))
			if n < 0 || len(pad) == 0 {
				b.AppendNull()
				return nil
			}
			if n > types.MaxLength {
				return c.evalError("length %d is longer than a STRING can be", n)
			}
			v := []rune(ss[0].Value(i))
			fill := max(int(n)-len(v), 0)
			buf = buf[:0]
			if !left {
				buf = append(buf, v[:min(len(v), int(n))]...)
			}
			for k := 0; k < fill; k++ {
				buf = append(buf, pad[k%len(pad)])
			}
			if left {
				buf = append(buf, v[:min(len(v), int(n))]...)
			}
			b.Append(string(buf))
			return nil
		})
	}
}

// splitIndex follows Flink (Apache Commons' splitByWholeSeparator-
// PreserveAllTokens): empty fields count, an empty string has no fields,
// an empty separator splits at each whitespace character.
func splitIndex(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	ss := strs(as)
	idx := render.IntReader(as[2])
	return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
		v, sep, k := ss[0].Value(i), ss[1].Value(i), idx(i)
		var fields []string
		switch {
		case v == "":
		case sep == "":
			start := 0
			for off, r := range v {
				if unicode.IsSpace(r) {
					fields = append(fields, v[start:off])
					start = off + utf8.RuneLen(r)
				}
			}
			fields = append(fields, v[start:])
		default:
			fields = strings.Split(v, sep)
		}
		if k < 0 || k >= int64(len(fields)) {
			b.AppendNull()
		} else {
			b.Append(fields[k])
		}
		return nil
	})
}

// compilePattern compiles argument k once if it is a constant; a pattern
// that does not compile fails the statement.
func compilePattern(k int) func(c *call) error {
	return func(c *call) error {
		lit, ok := c.args[k].(*literal)
		if !ok || !lit.val.IsValid() {
			return nil
		}
		re, err := compileRegexp(c, lit.val.String())
		if err != nil {
			return err
		}
		c.state = re
		return nil
	}
}

func compileRegexp(c *call, pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, Errorf(ErrEval, "bad regular expression %s in %s: %v", types.QuoteString(pattern), c.fn.name, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return re, nil
}

// patternOf yields the compiled pattern of row i: the constant one, or the
// row's, compiled when it differs from the row before's.
func patternOf(c *call, a arrow.Array) func(i int) (*regexp.Regexp, error) {
	if re, ok := c.state.(*regexp.Regexp); ok {
		return func(int) (*regexp.Regexp, error) { return re, nil }
	}
	s := a.(*array.String)
	var last string
	var re *regexp.Regexp
	return func(i int) (*regexp.Regexp, error) {
		if p := s.Value(i); re == nil || p != last {
			r, err := compileRegexp(c, p)
			if err != nil {
				return nil, err
			}
			re, last = r, p
		}
		return re, nil
	}
}

func regexpMatch(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	s, pat := as[0].(*array.String), patternOf(c, as[1])
	return rowsOf(ec, c, as, func(b *array.BooleanBuilder, i int) error {
		re, err := pat(i)
		if err != nil {
			return err
		}
		b.UnsafeAppend(re.MatchString(s.Value(i)))
		return nil
	})
}

func regexpExtract(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	s, pat := as[0].(*array.String), patternOf(c, as[1])
	group := func(int) int64 { return 0 }
	if len(as) == 3 {
		group = render.IntReader(as[2])
	}
	return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
		re, err := pat(i)
		if err != nil {
			return err
		}
		v, g := s.Value(i), group(i)
		m := re.FindStringSubmatchIndex(v)
		if m == nil || g < 0 || g > int64(re.NumSubexp()) || m[2*g] < 0 {
			b.AppendNull()
			return nil
		}
		b.Append(v[m[2*g]:m[2*g+1]])
		return nil
	})
}

func regexpReplace(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	ss, pat := strs(as), patternOf(c, as[1])
	return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
		re, err := pat(i)
		if err != nil {
			return err
		}
		b.Append(re.ReplaceAllLiteralString(ss[0].Value(i), ss[2].Value(i)))
		return nil
	})
}
