package strictjson

import "testing"

// Numbers are the key scheme's to judge: Check reads any number as
// well-formed, out of float64 range or not, by its fast scan and its token
// walk alike, so the intake can refuse it as invalid rather than malformed.
func TestCheckLeavesNumbersToTheKeyScheme(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"n":1e400}`, `{"n":9007199254740993}`, `[1e-400,-0.0,2.4e-324,1,{"a":{"a":1E+999}}]`} {
		if err := Check([]byte(body)); err != nil {
			t.Errorf("Check(%s) = %v", body, err)
		}
		if err := checkJSONTokens([]byte(body)); err != nil {
			t.Errorf("token walk of %s = %v", body, err)
		}
	}
}
