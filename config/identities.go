package config

import "github.com/countersign/countersign/identity"

// badIDs says, for each of ids that is not an identity (identity.Parse),
// why: `"bob" is not a Slack user id (U…, W…), …`. The caller names the
// field first, as the problem's subject ("approver", "owner").
func badIDs(ids []string) []error {
	var errs []error
	for _, s := range ids {
		if _, err := identity.Parse(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// canonical is ids as the surfaces report a clicker and the store keeps a
// decider (identity.ID.String): slack:U1 is U1, so a configured list is
// compared with a click by equality. Validate has refused any id that does
// not parse; one that still does not is kept as written.
func canonical(ids []string) []string {
	if ids == nil {
		return nil
	}
	out := make([]string, len(ids))
	for i, s := range ids {
		out[i] = s
		if c, err := identity.Canonical(s); err == nil {
			out[i] = c
		}
	}
	return out
}

// isGroup reports whether a configured id names a user group, whose
// members only its surface can list.
func isGroup(s string) bool {
	id, err := identity.Parse(s)
	return err == nil && id.IsGroup()
}
