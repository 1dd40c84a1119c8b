package reviewpage

import (
	"html/template"
	"strings"
	"testing"
	"time"
)

// The functions render a request's parts as both page sets show them.
func TestFuncs(t *testing.T) {
	t.Parallel()
	page := template.Must(template.New("p").Funcs(Funcs("/inbox")).Parse(
		`{{prefix}}|{{shortKey .Key}}|{{pretty .Effect}}|{{range misleading .Effect}}{{.Kind}}{{end}}|{{when .At}}|{{inc 1}}`))
	var b strings.Builder
	err := page.Execute(&b, map[string]any{"Key": "wa_0123456789abcdef0123", "Effect": []byte(`{"a":"x\u200By"}`),
		"At": time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))})
	if err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{"/inbox|wa_", "{\n  &#34;a&#34;: &#34;x\\u200By&#34;\n}", "|invisible|", "2026-01-02 02:04:05 UTC|2"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if PrettyJSON([]byte("not json")) != "not json" {
		t.Error("text that is not JSON is not shown as it is")
	}
}
