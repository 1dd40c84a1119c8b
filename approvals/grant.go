package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/store"
)

// Grant is a standing approval of similar writes (see GrantRule): who
// granted it, for which agent and tool, the effect fields a later intent
// must match, the amount ceiling, and when it ends.
type Grant = store.Grant

// MaxGrantsListed bounds a listing of grants.
const MaxGrantsListed = 100

// grantFor returns a live grant that covers the intent, if one does. Only a
// round that asks for exactly one approval may be covered by a grant, and
// only while the grantor could approve the intent themselves: one of its
// approvers in the configuration in force, neither whoever it is made for
// nor an owner of its agent.
func (s *Service) grantFor(ctx context.Context, tool Tool, agent string, in PolicyInput, p store.Policy) (Grant, bool, error) {
	if tool.Grants == nil || p.Needed() > 1 || (p.Verdict != "" && p.Verdict != VerdictAsk) {
		return Grant{}, false, nil
	}
	live, err := s.DB.LiveGrants(ctx, tool.Name, agent, in.Now)
	if err != nil {
		return Grant{}, false, fmt.Errorf("reading grants: %w", err)
	}
	for _, g := range live {
		if !covers(g, in.Effect) {
			continue
		}
		ok, err := s.mayGrant(ctx, tool, agent, in.RequestedFor, p, g.Grantor)
		if err != nil {
			return Grant{}, false, err
		}
		if ok {
			return g, true, nil
		}
	}
	return Grant{}, false, nil
}

// mayGrant reports whether grantor could approve, now, an intent of agent
// made for requestedFor under policy p: the rule MayVote applies to an
// approval.
func (s *Service) mayGrant(ctx context.Context, tool Tool, agent, requestedFor string, p store.Policy, grantor string) (bool, error) {
	if requestedFor != "" && samePerson(requestedFor, grantor) {
		return false, nil
	}
	if owner, err := s.isAmong(ctx, s.currentOwners()[agent], grantor); err != nil || owner {
		return false, err
	}
	approvers := p.Approvers
	if approvers == nil {
		approvers = tool.Approvers
	}
	if frozen, err := s.isAmong(ctx, approvers, grantor); err != nil || !frozen {
		return false, err
	}
	return s.isAmong(ctx, tool.configuredApprovers(), grantor)
}

// covers reports whether the grant covers an effect (decoded with
// UseNumber): every matched field equal to the granted value (numbers by
// value, exactly), and the amount, when the grant has a ceiling, a number
// at most the ceiling.
func covers(g Grant, effect any) bool {
	for field, raw := range g.Match {
		want, err := decodeJSON(raw)
		if err != nil {
			return false
		}
		got, found := lookupPath(effect, field)
		if !found || !sameJSON(got, want) {
			return false
		}
	}
	if g.AmountCeiling == nil {
		return true
	}
	v, found := lookupPath(effect, g.AmountField)
	amount, ok := number(v)
	ceiling, okCeiling := new(big.Rat).SetString(*g.AmountCeiling)
	return found && ok && okCeiling && amount.Cmp(ceiling) <= 0
}

// sameJSON compares two JSON values: numbers by value, objects and arrays
// member by member.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return equal(a, b)
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// grantAsked builds the standing grant an approval asks for, for d.Grant,
// from the tool as configured now and the request's effect: its Match
// fields' values and its amount as the ceiling. It refuses (an
// *InputError on "grant") a tool without grants, a duration outside
// (0, max_ttl], a reject, and a round that needs more than one approval.
func grantAsked(tool Tool, req store.Request, d Decision) (*store.NewGrant, error) {
	rule := tool.Grants
	switch {
	case d.Verdict != store.VerdictApprove:
		return nil, invalid("grant", "only an approval can allow similar writes")
	case rule == nil:
		return nil, invalid("grant", "%s does not allow standing grants; approve this write alone", req.Tool)
	case d.Grant <= 0 || d.Grant > rule.MaxTTL:
		return nil, invalid("grant", "a standing grant of %s lasts at most %s, not %s", req.Tool, rule.MaxTTL, d.Grant)
	case req.Policy.Needed() > 1:
		return nil, invalid("grant", "this request needs %d approvals; a standing grant covers only writes that need one, so approve it alone",
			req.Policy.Needed())
	}
	effect, err := decodeJSON(req.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("decoding the effect of %s: %w", req.Key, err)
	}
	g := &store.NewGrant{Match: map[string]json.RawMessage{}, TTL: d.Grant}
	for _, field := range rule.Match {
		v, found := lookupPath(effect, field)
		if !found {
			return nil, invalid("grant", "the effect has no %s to match later writes on; approve this write alone", field)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", field, err)
		}
		g.Match[field] = raw
	}
	if rule.Amount != "" {
		v, found := lookupPath(effect, rule.Amount)
		if _, ok := number(v); !found || !ok {
			return nil, invalid("grant", "the effect has no number at %s to cap later writes with; approve this write alone", rule.Amount)
		}
		ceiling := string(v.(json.Number))
		g.AmountField, g.AmountCeiling = rule.Amount, &ceiling
	}
	return g, nil
}

// ErrNotGrantor: a revocation by someone who neither granted the grant nor
// is an admin. It is answered as the grant not being found.
var ErrNotGrantor = fmt.Errorf("%w: not the grant's grantor", store.ErrNotFound)

// Grants lists the grants live now, newest first: viewer's own, or, for an
// admin, everyone's.
func (s *Service) Grants(ctx context.Context, viewer string, admin bool) ([]Grant, error) {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	p := store.ListGrantsParams{Grantor: viewer, LiveAt: &now, Limit: MaxGrantsListed}
	if admin {
		p.Grantor = ""
	}
	return s.DB.ListGrants(ctx, p)
}

// RevokeGrant ends grant id, as by: its grantor, or anyone when admin.
// revoked is false, with the grant as it stands, when it had ended
// already; a grant that does not exist, or is someone else's for a
// non-admin, is ErrNotFound (ErrNotGrantor).
func (s *Service) RevokeGrant(ctx context.Context, id, by string, admin bool) (g Grant, revoked bool, err error) {
	g, err = s.DB.GrantByID(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Grant{}, false, ErrNotFound
	case err != nil:
		return Grant{}, false, err
	case !admin && g.Grantor != by:
		return Grant{}, false, ErrNotGrantor
	}
	p := store.RevokeGrantParams{ID: id, By: by, Now: s.now()}
	if !admin {
		p.Grantor = by
	}
	g, revoked, err = s.DB.RevokeGrant(ctx, p)
	if err != nil {
		return Grant{}, false, err
	}
	if revoked {
		s.Logger.Info("grant revoked", slog.String("grant", g.ID), slog.String("by", by), slog.String("grantor", g.Grantor),
			slog.String("tool", g.Tool), slog.String("agent", g.Agent))
	}
	return g, revoked, nil
}

// DurationText is a duration as people write it: "8h", "1h30m", "45m".
func DurationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// GrantScope says, for a reviewer about to grant, what a standing grant
// from req under rule would let through: "Approves this write and, for
// 8h, billing-agent's billing.credit writes whose customer is "cus_1" and
// whose amount_cents is at most 4200, without asking."
func GrantScope(req store.Request, rule GrantRule) string {
	effect, _ := decodeJSON(req.Snapshot)
	var conds []string
	for _, field := range rule.Match {
		v, _ := lookupPath(effect, field)
		raw, _ := json.Marshal(v)
		conds = append(conds, field+" is "+string(raw))
	}
	if rule.Amount != "" {
		v, _ := lookupPath(effect, rule.Amount)
		raw, _ := json.Marshal(v)
		conds = append(conds, rule.Amount+" is at most "+string(raw))
	}
	which := ""
	if len(conds) > 0 {
		which = " whose " + strings.Join(conds, " and whose ")
	}
	return fmt.Sprintf("Approves this write and, for %s, %s's %s writes%s, without asking (writes that need more than one approval still ask).",
		DurationText(rule.MaxTTL), req.RequestedBy, req.Tool, which)
}

// GrantText describes a grant for a listing: what it lets through and
// until when.
func GrantText(g Grant) string {
	var conds []string
	for _, field := range slices.Sorted(maps.Keys(g.Match)) {
		conds = append(conds, field+" is "+string(g.Match[field]))
	}
	if g.AmountCeiling != nil {
		conds = append(conds, g.AmountField+" is at most "+*g.AmountCeiling)
	}
	which := ""
	if len(conds) > 0 {
		which = " whose " + strings.Join(conds, " and whose ")
	}
	return fmt.Sprintf("%s's %s writes%s", g.Agent, g.Tool, which)
}
