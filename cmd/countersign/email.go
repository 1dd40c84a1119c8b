package main

import (
	"context"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/emailsurface"
	"github.com/countersign/countersign/surface"
	"github.com/countersign/countersign/surface/previewhttp"
)

// emailConvergeBatch is how many stale cards one convergence sweep queues,
// as the bot's.
const emailConvergeBatch = 500

// addEmail builds the email surface when the email section is set: its
// link pages at emailsurface.LinkPath, and its adapter. With Slack, the
// bot's outbox loop delivers to it too (a.surfaces); without, a loop of
// its own delivers the outbox to email alone.
func (a *app) addEmail(slack bool) error {
	e := a.cfg.File.Email.WithDefaults()
	if !e.Enabled() {
		return nil
	}
	logger := a.logger.With("component", "email")
	if len(a.cfg.DispatchSecrets()) == 0 {
		logger.Warn("COUNTERSIGN_DISPATCH_SECRET is not set: email links are signed with a key of this process, and stop working when it restarts or on another replica")
	}
	em, err := emailsurface.New(emailsurface.Config{
		SMTP: emailsurface.SMTP{Addr: e.SMTP.Addr, Username: e.SMTP.Username, Password: e.SMTP.Password,
			Opportunistic: e.SMTP.StartTLS == config.StartTLSOpportunistic},
		From: e.SMTP.From, LinkBase: e.LinkBase, LinkTTL: e.LinkTTL,
		Secrets: a.cfg.DispatchSecrets(),
		Uses:    func(tool string) bool { return a.currentConfig().ToolUses(tool, config.SurfaceEmail) },
		Review:  a.review, Cards: a.db, Attempts: a.db, Logger: logger,
	})
	if err != nil {
		return err
	}
	a.mux.Handle(emailsurface.LinkPath, em.Handler())
	if slack {
		a.surfaces = append(a.surfaces, em.Surface())
		return nil
	}
	d := surface.New(surface.Config{Ledger: a.db, Tools: a.review, Adapters: []surface.Adapter{em.Surface()}, Logger: logger,
		Previews: previewhttp.New()})
	if err := a.sched.addLeaderSweep("email card convergence", a.cfg.File.Executor.CardSchedule, func(ctx context.Context) error {
		_, err := a.db.EnqueueStaleCards(ctx, emailConvergeBatch)
		return err
	}); err != nil {
		return err
	}
	a.add("email", d, a.executor.ShutdownGrace())
	return nil
}
