package hook

import (
	_ "embed"
	"net/http"
	"slices"
)

// openAPIDocument is the OpenAPI 3.1 description of the hook, served at
// GET /v1/openapi.json. The handlers are tested against it.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIDocument returns the OpenAPI 3.1 description of the hook.
func OpenAPIDocument() []byte { return slices.Clone(openAPIDocument) }

// serveOpenAPI answers the document, to anyone: it describes the routes,
// and nothing of any agent or request.
func (h *Handler) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPIDocument)
}

// JWKSPath is where the public keys receipts are verified with are served.
const JWKSPath = "/.well-known/jwks.json"

// serveJWKS answers the receipts' public keys, to anyone: a provider needs
// them to check a receipt, and they are public.
func (h *Handler) serveJWKS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(h.svc.JWKS())
}
