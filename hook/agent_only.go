package hook

import (
	"net/http"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/requestid"
	"github.com/countersign/countersign/wire"
)

// AgentOnly serves next only to a request that carries an agent's bearer
// token, passing it the agent; any other request gets the agent API's 401
// (the error envelope, a Request-Id and WWW-Authenticate). It is how a
// surface served beside the API, such as /mcp, takes the same tokens.
func (as Agents) AgentOnly(next func(w http.ResponseWriter, r *http.Request, agent approvals.Agent)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authorization := r.Header.Get("Authorization")
		agent, ok := as.Authenticate(authorization)
		if !ok {
			if requestid.From(r.Context()) == "" {
				id := requestid.New()
				w.Header().Set(requestid.Header, id)
				r = r.WithContext(requestid.With(r.Context(), id))
			}
			refuseUnauthorized(w, r, authorization)
			return
		}
		next(w, r, agent)
	})
}

// Refuse answers a request of a surface served beside the API with the
// API's error envelope (and the id requestid.Middleware gave it) at
// status: Status(ref.Code), or where that surface must say more than the
// code's usual status does (/mcp: 403 unauthorized for a valid token in
// another agent's session, 431 too_large for headers).
func Refuse(w http.ResponseWriter, r *http.Request, status int, ref approvals.Refusal) {
	writeJSON(w, status, wire.ErrorBody{Error: wire.Error{Code: ref.Code, Message: ref.Message, Field: ref.Field,
		Errors: ref.Errors, Status: ref.Status, Tools: ref.Tools, Key: ref.Key, Tier: ref.Tier,
		RequestID: requestid.From(r.Context())}})
}
