package main

import (
	"context"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/surface"
	"github.com/countersign/countersign/surface/previewhttp"
	"github.com/countersign/countersign/teamssurface"
)

// teamsConvergeBatch is how many stale cards one convergence sweep queues,
// as the bot's.
const teamsConvergeBatch = 500

// addTeams builds the Microsoft Teams surface when the teams section is
// set: its messaging endpoint at POST teamssurface.MessagesPath, and its
// adapter. With Slack, the bot's outbox loop delivers to it too
// (a.surfaces); without, a loop of its own delivers the outbox to it and
// to the surfaces added before it (email).
func (a *app) addTeams(slack bool) error {
	t := a.cfg.File.Teams.WithDefaults()
	if !t.Enabled() {
		return nil
	}
	logger := a.logger.With("component", "teams")
	tm, err := teamssurface.New(teamssurface.Config{
		AppID: t.AppID, AppPassword: t.AppPassword,
		OpenIDMetadata: t.OpenIDMetadata, TokenURL: t.TokenURL, ServiceURL: t.ServiceURL,
		Conversation: func(tool string) string { return a.currentConfig().File.Teams.Conversation(tool) },
		Uses:         func(tool string) bool { return a.currentConfig().ToolUses(tool, config.SurfaceTeams) },
		Review:       a.review, Cards: a.db, Logger: logger,
	})
	if err != nil {
		return err
	}
	a.mux.Handle("POST "+teamssurface.MessagesPath, tm.Handler())
	a.surfaces = append(a.surfaces, tm.Surface())
	if slack {
		return nil
	}
	d := surface.New(surface.Config{Ledger: a.db, Tools: a.review, Adapters: a.surfaces, Logger: logger,
		Previews: previewhttp.New()})
	if err := a.sched.addLeaderSweep("teams card convergence", a.cfg.File.Executor.CardSchedule, func(ctx context.Context) error {
		_, err := a.db.EnqueueStaleCards(ctx, teamsConvergeBatch)
		return err
	}); err != nil {
		return err
	}
	a.add("teams", d, a.executor.ShutdownGrace())
	return nil
}
