package canonical

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Number is a JSON number as an exact decimal: (-1)^neg × digits × 10^exp,
// where digits has no leading or trailing zeros. Zero has digits "".
// Every spelling of a value (1, 1.0, 10e-1) gives the same Number, so two
// Numbers are equal (==) exactly when their values are.
type Number struct {
	neg    bool
	digits string
	exp    int64
}

// maxExponent bounds the exponent a literal may carry. It is far beyond
// any value a tool means, and keeps exponent arithmetic from overflowing.
const maxExponent = 1_000_000_000

var errNumber = errors.New("not a JSON number")

// ParseNumber reads a JSON number literal (RFC 8259 grammar) exactly. An
// exponent beyond ±1,000,000,000, as written or in the form String
// writes, is an error.
func ParseNumber(lit string) (Number, error) {
	s := lit
	var n Number
	if strings.HasPrefix(s, "-") {
		n.neg, s = true, s[1:]
	}
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[:i]
	if intPart == "" || len(intPart) > 1 && intPart[0] == '0' {
		return Number{}, errNumber
	}
	s = s[i:]
	var frac string
	if strings.HasPrefix(s, ".") {
		j := 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == 1 {
			return Number{}, errNumber
		}
		frac, s = s[1:j], s[j:]
	}
	var e int64
	if s != "" {
		if s[0] != 'e' && s[0] != 'E' {
			return Number{}, errNumber
		}
		s = s[1:]
		sign := int64(1)
		if s != "" && (s[0] == '+' || s[0] == '-') {
			if s[0] == '-' {
				sign = -1
			}
			s = s[1:]
		}
		if s == "" || strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
			return Number{}, errNumber
		}
		s = strings.TrimLeft(s, "0")
		if len(s) > 10 {
			return Number{}, fmt.Errorf("the exponent of %.20s… is out of range", lit)
		}
		if s != "" {
			v, _ := strconv.ParseInt(s, 10, 64)
			e = sign * v
		}
		if e > maxExponent || e < -maxExponent {
			return Number{}, fmt.Errorf("the exponent of %.20s… is out of range", lit)
		}
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	e -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	e += int64(len(digits) - len(trimmed))
	if trimmed == "" {
		return Number{}, nil // zero, including -0
	}
	// The bound holds for the exponent String writes too (10e1000000000
	// is 1e+1000000001), so that every Number's text parses back.
	if sci := e + int64(len(trimmed)) - 1; sci > maxExponent || sci < -maxExponent {
		return Number{}, fmt.Errorf("the exponent of %.20s… is out of range", lit)
	}
	n.digits, n.exp = trimmed, e
	return n, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// NumberOf converts a Go number (json.Number, any float or integer type)
// as JSON would carry it. ok is false for values that are not numbers; err
// is set for NaN, infinities and a json.Number that is not a JSON number.
func NumberOf(v any) (n Number, ok bool, err error) {
	var lit string
	switch x := v.(type) {
	case json.Number:
		lit = string(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Number{}, true, fmt.Errorf("%v is not a JSON number", x)
		}
		lit = strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return Number{}, true, fmt.Errorf("%v is not a JSON number", x)
		}
		lit = strconv.FormatFloat(float64(x), 'g', -1, 32)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		// fmt writes an integer in base 10, with a minus sign when negative.
		lit = fmt.Sprint(x)
	default:
		return Number{}, false, nil
	}
	// strconv writes exponents as e+07; JSON takes that form too.
	n, err = ParseNumber(lit)
	if err != nil {
		return Number{}, true, fmt.Errorf("%q: %w", lit, err)
	}
	return n, true, nil
}

// String writes the number the way JavaScript writes a number (plain
// notation while the decimal point is within 21 digits, else d.ddde±x) but
// with every digit kept, so that equal values give equal text and different
// values different text.
func (n Number) String() string {
	if n.digits == "" {
		return "0"
	}
	var b strings.Builder
	if n.neg {
		b.WriteByte('-')
	}
	d := n.digits
	p := int64(len(d)) + n.exp // digits before the decimal point
	switch {
	case n.exp >= 0 && p <= 21:
		b.WriteString(d)
		b.WriteString(strings.Repeat("0", int(n.exp)))
	case 0 < p && p <= 21:
		b.WriteString(d[:p])
		b.WriteByte('.')
		b.WriteString(d[p:])
	case -6 < p && p <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", int(-p)))
		b.WriteString(d)
	default:
		b.WriteString(d[:1])
		if len(d) > 1 {
			b.WriteByte('.')
			b.WriteString(d[1:])
		}
		b.WriteByte('e')
		if p-1 > 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.FormatInt(p-1, 10))
	}
	return b.String()
}

// Scaled returns the number times 10^shift as an int64, when that is a
// whole number that fits: Scaled(0) is the number as an integer, Scaled(4)
// as a count of ten-thousandths.
func (n Number) Scaled(shift int64) (int64, bool) {
	if n.digits == "" {
		return 0, true
	}
	e := n.exp + shift
	if e < 0 || int64(len(n.digits))+e > 19 {
		return 0, false
	}
	s := n.digits + strings.Repeat("0", int(e))
	if n.neg {
		s = "-" + s
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}
