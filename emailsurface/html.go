package emailsurface

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"mime/quotedprintable"
	"strings"
)

// writeBody writes a message's body as multipart/alternative: the plain
// text exactly as it is (what text-only clients and scanners read), then
// the same text as HTML, escaped in full, with only the links to this
// countersign's pages (lines that are linkBase + LinkPath + a token) made
// into anchors. No text an agent wrote becomes markup or a link.
func writeBody(b *bytes.Buffer, linkBase, body string) {
	sum := sha256.Sum256([]byte(body))
	boundary := "countersign-" + hex.EncodeToString(sum[:12])
	fmt.Fprintf(b, "Content-Type: multipart/alternative; boundary=%q\r\n\r\n", boundary)
	part := func(contentType, text string) {
		fmt.Fprintf(b, "--%s\r\nContent-Type: %s; charset=\"utf-8\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n", boundary, contentType)
		w := quotedprintable.NewWriter(b)
		_, _ = w.Write([]byte(strings.ReplaceAll(text, "\n", "\r\n")))
		_ = w.Close()
		b.WriteString("\r\n")
	}
	part("text/plain", body)
	part("text/html", htmlOf(linkBase, body))
	fmt.Fprintf(b, "--%s--\r\n", boundary)
}

// htmlOf is body as an HTML document: each line escaped, a link line an
// anchor.
func htmlOf(linkBase, body string) string {
	var h strings.Builder
	h.WriteString(`<!doctype html><html><head><meta charset="utf-8"></head><body>` +
		`<pre style="font:14px/1.5 ui-monospace,monospace;white-space:pre-wrap">`)
	prefix := linkBase + LinkPath
	for i, line := range strings.Split(body, "\n") {
		if i > 0 {
			h.WriteString("\n")
		}
		token, isLink := strings.CutPrefix(line, prefix)
		if isLink && token != "" && !strings.ContainsAny(token, " \t<>\"'") {
			fmt.Fprintf(&h, `<a href="%s">%s</a>`, html.EscapeString(line), html.EscapeString(line))
			continue
		}
		h.WriteString(html.EscapeString(line))
	}
	h.WriteString("</pre></body></html>")
	return h.String()
}
