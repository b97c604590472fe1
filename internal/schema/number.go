package schema

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// num is a JSON number as JSON Schema compares it: by exact decimal value.
// Comparisons take the cheapest exact route: int64 when both sides are
// integers that fit, float64 when the two floats differ (rounding to nearest
// is monotonic, so differing floats order the exact values the same way), and
// math/big only when the floats are equal.
//
// A float64 instance value stands for its shortest decimal form (0.1 is one
// tenth, not the binary fraction nearest to it), as in the JSON text it came
// from and as github.com/santhosh-tekuri/jsonschema/v6 reads it.
type num struct {
	lit   string // exact decimal text; "" for a float not yet formatted
	i     int64  // the exact value when isInt
	f     float64
	isInt bool
	hasF  bool
	fbits int // 32 for a float32 value: its shortest form is per float32
}

// numOf converts a number of any Go numeric type. ok is false for non-numbers.
func numOf(v any) (n num, ok bool) {
	switch x := v.(type) {
	case json.Number:
		return numFromLiteral(string(x)), true
	case float64:
		return numFromFloat(x, 64), true
	case float32:
		return numFromFloat(float64(x), 32), true
	case int:
		return num{i: int64(x), isInt: true}, true
	case int8:
		return num{i: int64(x), isInt: true}, true
	case int16:
		return num{i: int64(x), isInt: true}, true
	case int32:
		return num{i: int64(x), isInt: true}, true
	case int64:
		return num{i: x, isInt: true}, true
	case uint:
		return numFromUint(uint64(x)), true
	case uint8:
		return num{i: int64(x), isInt: true}, true
	case uint16:
		return num{i: int64(x), isInt: true}, true
	case uint32:
		return num{i: int64(x), isInt: true}, true
	case uint64:
		return numFromUint(x), true
	}
	return num{}, false
}

func numFromLiteral(lit string) num {
	n := num{lit: lit}
	n.i, n.isInt = smallInt(lit)
	return n
}

// smallInt parses a plain integer literal of at most 18 digits, which always
// fits an int64; anything else takes the general path.
func smallInt(s string) (int64, bool) {
	neg := false
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func numFromFloat(f float64, bits int) num {
	n := num{f: f, hasF: true, fbits: bits}
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		n.i, n.isInt = int64(f), true
	}
	if bits == 32 {
		// The float64 nearest the float32's shortest decimal form.
		n.f, _ = strconv.ParseFloat(n.text(), 64)
	}
	return n
}

func numFromUint(u uint64) num {
	if u <= math.MaxInt64 {
		return num{i: int64(u), isInt: true}
	}
	return num{lit: strconv.FormatUint(u, 10)}
}

// text returns the exact decimal form.
func (n *num) text() string {
	switch {
	case n.lit != "":
	case n.isInt && !n.hasF:
		n.lit = strconv.FormatInt(n.i, 10)
	default:
		bits := n.fbits
		if bits == 0 {
			bits = 64
		}
		n.lit = strconv.FormatFloat(n.f, 'g', -1, bits)
	}
	return n.lit
}

func (n *num) float() float64 {
	if !n.hasF {
		if n.isInt {
			n.f = float64(n.i)
		} else {
			// Syntax was checked; out of range gives ±Inf or 0, which still
			// orders correctly.
			n.f, _ = strconv.ParseFloat(n.lit, 64)
		}
		n.hasF = true
	}
	return n.f
}

func (n *num) rat() *big.Rat {
	if n.isInt {
		return new(big.Rat).SetInt64(n.i)
	}
	r, ok := new(big.Rat).SetString(n.text())
	if !ok {
		return new(big.Rat)
	}
	return r
}

// integerLiteral reports whether a valid JSON number literal denotes a whole
// number, without big arithmetic: the digits after the decimal point that are
// not trailing zeros must all be moved left of it by the exponent.
func integerLiteral(lit string) bool {
	mant, exp, _ := strings.Cut(strings.ToLower(lit), "e")
	_, frac, _ := strings.Cut(mant, ".")
	frac = strings.TrimRight(frac, "0")
	if frac == "" {
		if exp == "" || !strings.HasPrefix(exp, "-") {
			return true
		}
		// A negative exponent keeps a whole number whole only if it just
		// removes trailing zeros of the integer part, or the number is zero.
		intPart := strings.TrimLeft(strings.TrimPrefix(mant, "-"), "0")
		intPart, _, _ = strings.Cut(intPart, ".")
		if intPart == "" {
			return true
		}
		e, err := strconv.Atoi(exp[1:])
		if err != nil {
			return false
		}
		zeros := len(intPart) - len(strings.TrimRight(intPart, "0"))
		return e <= zeros
	}
	if exp == "" || strings.HasPrefix(exp, "-") {
		return false
	}
	e, err := strconv.Atoi(strings.TrimPrefix(exp, "+"))
	return err == nil && e >= len(frac)
}

// bound is a number taken from a schema keyword, prepared for comparisons.
type bound struct {
	num
	r *big.Rat
}

func newBound(v any) (*bound, bool) {
	n, ok := numOf(v)
	if !ok {
		return nil, false
	}
	b := &bound{num: n}
	b.float()
	b.r = b.rat()
	return b, true
}

// validNumberLiteral reports whether s is an RFC 8259 number within the
// bounds Decode accepts.
func validNumberLiteral(s string) bool {
	p := parser{data: []byte(s)}
	if len(s) == 0 {
		return false
	}
	end, ok := p.scanNumber()
	return ok && end == len(s) && numberBounds(p.data) == ""
}
