package hook

import (
	"net/http"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/requestid"
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
			id := requestid.New()
			w.Header().Set(requestid.Header, id)
			refuseUnauthorized(w, r.WithContext(requestid.With(r.Context(), id)), authorization)
			return
		}
		next(w, r, agent)
	})
}
