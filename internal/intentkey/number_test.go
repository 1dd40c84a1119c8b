package intentkey

import (
	"errors"
	"strings"
	"testing"
)

// longDecimal is 0.111… with 5,000 digits, which a float64 keeps 16 of.
var longDecimal = "0." + strings.Repeat("1", 5000)

// numberCases are the refusals a tester filed and the ordinary numbers
// around them, with what RFC 8785 writes for each refused as inexact.
var numberCases = []struct {
	literal   string
	reason    numberReason
	canonical string
}{
	{"9007199254740993.0", inexact, "9007199254740992"},
	{"12345678901234567891e0", inexact, "12345678901234567000"},
	{"1e-400", inexact, "0"},
	{"-1e-400", inexact, "0"},
	{"2.4e-324", inexact, "0"},
	{longDecimal, inexact, "0.1111111111111111"},
	{"0.30000000000000001", inexact, "0.3"},
	// A float64's value written out is still not what RFC 8785 writes:
	// it writes the shortest text that reads back as the same float64.
	{"0.1000000000000000055511151231257827", inexact, "0.1"},
	{"4.9406564584124654e-324", inexact, "5e-324"},
	{"2.2250738585072011e-308", inexact, "2.225073858507201e-308"},
	{"1.7976931348623158e308", inexact, "1.7976931348623157e+308"},
	{"123456789012345678e-1", inexact, "12345678901234568"},
	{"1.7976931348623159e308", outOfRange, ""},
	{"1e400", outOfRange, ""},
	{"-1.5E+309", outOfRange, ""},
	{"9007199254740993", beyondSafeInteger, ""},
	{"-9007199254740993", beyondSafeInteger, ""},
	{"123456789012345678", beyondSafeInteger, ""},
	// Exact, but written as a plain integer past 2^53: the safe-integer
	// rule refuses every such id, not only the odd ones.
	{"18014398509481984", beyondSafeInteger, ""},
	{"0", 0, ""},
	{"-0", 0, ""},
	{"-0.0", 0, ""},
	{"1", 0, ""},
	{"1.0", 0, ""},
	{"1e2", 0, ""},
	{"1E+2", 0, ""},
	{"0.5", 0, ""},
	{"0.1", 0, ""},
	{"1.5", 0, ""},
	{"1e21", 0, ""},
	{"1e-7", 0, ""},
	{"0.30000000000000004", 0, ""},
	{"5e-324", 0, ""},
	{"-5e-324", 0, ""},
	{"1.7976931348623157e308", 0, ""},
	{"1e23", 0, ""},
	{"8.41e21", 0, ""},
	{"9007199254740992", 0, ""},
	{"-9007199254740992", 0, ""},
	{"1.8014398509481984e16", 0, ""},
	{"0e99999999999999999999", 0, ""},
	{"0.000e-99999999999999999999", 0, ""},
	{"100.00e-2", 0, ""},
}

func TestCheckNumber(t *testing.T) {
	t.Parallel()
	for _, tt := range numberCases {
		err := CheckNumber(tt.literal, "/effect/amount")
		if tt.reason == 0 {
			if err != nil {
				t.Errorf("%s: %v, want it accepted", shown(tt.literal), err)
			}
			continue
		}
		var n *NumberError
		if !errors.As(err, &n) || n.reason != tt.reason || n.Pointer != "/effect/amount" || n.Literal != tt.literal {
			t.Errorf("%s: %#v, want a NumberError (reason %d) at /effect/amount", shown(tt.literal), err, tt.reason)
			continue
		}
		if n.Canonical != tt.canonical {
			t.Errorf("%s: RFC 8785 writes %q, want %q", shown(tt.literal), n.Canonical, tt.canonical)
		}
		if msg := n.Error(); !strings.Contains(msg, "/effect/amount") || !strings.Contains(msg, "send it as a string") || len(msg) > 200 {
			t.Errorf("%s: message %q", shown(tt.literal), msg)
		}
	}
}

func TestNumberErrorMessages(t *testing.T) {
	t.Parallel()
	for literal, want := range map[string]string{
		"1e-400":             "the number 1e-400 at /effect/lines/1/amount is not exact: RFC 8785 writes it as 0; send it as a string",
		"9007199254740993":   "the integer 9007199254740993 at /effect/lines/1/amount is beyond ±2^53, where integers are not all exact; send it as a string",
		"1e400":              "the number 1e400 at /effect/lines/1/amount is out of range; send it as a string",
		"9007199254740993.0": "the number 9007199254740993.0 at /effect/lines/1/amount is not exact: RFC 8785 writes it as 9007199254740992; send it as a string",
		longDecimal:          "the number 0.111111111111111111111111111111… (5002 characters) at /effect/lines/1/amount is not exact: RFC 8785 writes it as 0.1111111111111111; send it as a string",
	} {
		if err := CheckNumber(literal, "/effect/lines/1/amount"); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", shown(literal), err, want)
		}
	}
}

// CheckNumbers names the first refused number in document order by its
// JSON Pointer, escaping "~" and "/" in member names.
func TestCheckNumbersNamesThePointer(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]string{
		`{"lines":[{"amount":1.5},{"amount":9007199254740993.0}]}`:       "/effect/lines/1/amount",
		`{"a/b":{"c~d":[1,2,1e-400]},"z":1e400}`:                         "/effect/a~1b/c~0d/2",
		`{"note":"1e-400 in a string is text","n":[0.1,-0,"\"",2e-324]}`: "/effect/n/3",
		`{"":{"x\"y":12345678901234567891e0}}`:                           `/effect//x"y`,
	} {
		var n *NumberError
		if err := CheckNumbers([]byte(value), "/effect"); !errors.As(err, &n) || n.Pointer != want {
			t.Errorf("%s: %v, want a NumberError at %s", value, err, want)
		}
	}
	for _, value := range []string{
		`{}`, `[]`, `"9007199254740993.0"`, `{"a":[1,1.0,1e2,0.5,-0,{"b":null,"c":true,"d":false}],"e":"\\"}`,
		`{"1e-400":"2.4e-324","\u0031":0.30000000000000004}`,
	} {
		if err := CheckNumbers([]byte(value), "/effect"); err != nil {
			t.Errorf("%s: %v, want it accepted", value, err)
		}
	}
}
