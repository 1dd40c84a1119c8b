package lookup

import (
	"context"

	"github.com/countersign/countersign/store"
)

// Service answers lookups from a store.
type Service struct{ DB store.Store }

// Run answers q; see the package function Run.
func (s Service) Run(ctx context.Context, q Query) (Answer, error) { return Run(ctx, s.DB, q) }
