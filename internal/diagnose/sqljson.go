package diagnose

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// sqlJSON is args as asksSQL's coalesce(CAST(json(args) AS VARCHAR), ”)
// writes them, so that the streamed loop finding groups and labels calls
// as the SQL one does: "" for no arguments or null; else minified, keys in
// their order (duplicates kept), strings with only '"', '\\' and control
// characters escaped (\b \f \n \r \t, else \u00XX in capitals; "/" and
// non-ASCII written as is), integers in their shortest form ("-0" is "0";
// one past 64 bits kept as written), and other numbers as the shortest
// double that reads back, in plain notation with ".0" when whole if the
// exponent is from -6 to 20, else as 1.5e300 (a number past the double's
// range kept as written). DuckDB's json() (yyjson) does exactly this
// (TestSQLJSONIsDuckDBs asks it).
func sqlJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b strings.Builder
	s := string(raw)
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"':
			n := stringEnd(s, i)
			var v string
			if json.Unmarshal([]byte(s[i:n]), &v) != nil {
				b.WriteString(s[i:n])
			} else {
				writeSQLString(&b, v)
			}
			i = n
		case c == '-' || (c >= '0' && c <= '9'):
			n := i + 1
			for n < len(s) && strings.IndexByte("+-.eE0123456789", s[n]) >= 0 {
				n++
			}
			b.WriteString(sqlNumber(s[i:n]))
			i = n
		default:
			b.WriteByte(c)
			i++
		}
	}
	if out := b.String(); out != "null" {
		return out
	}
	return ""
}

// stringEnd returns the index just past the string that starts at s[i].
func stringEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(s)
}

func writeSQLString(b *strings.Builder, v string) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('"')
	for i := 0; i < len(v); {
		c := v[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			_, n := utf8.DecodeRuneInString(v[i:])
			b.WriteString(v[i : i+n])
			i += n
			continue
		}
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
		}
		i++
	}
	b.WriteByte('"')
}

func sqlNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
		if n, err := strconv.ParseUint(lit, 10, 64); err == nil {
			return strconv.FormatUint(n, 10)
		}
		return lit
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && math.IsInf(f, 0) {
		return lit
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	if x >= -6 && x <= 20 {
		out := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(out, ".") {
			out += ".0"
		}
		return out
	}
	return mant + "e" + strconv.Itoa(x)
}
