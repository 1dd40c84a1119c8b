package main

import (
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"github.com/countersign/countersign/inbox"
	"github.com/countersign/countersign/surface"
	"github.com/countersign/countersign/surface/previewhttp"
)

// mountInbox serves the review inbox under /inbox/ and returns its entry
// link, which works once, for the person at the terminal. With a
// configuration file the link also goes to the log, which a deployment's
// person reads (serve prints it in plain text too for a run on this
// machine: printConfiguredBanner); it is spent when opened and opens
// nothing from another machine.
func (a *app) mountInbox(addr net.Addr) string {
	h := inbox.New(inbox.Options{
		Service: a.review, Reviewer: a.cfg.InboxReviewer, Logger: a.logger.With("component", "inbox"),
		Previews: surface.NewPreviewer(a.db, a.review, previewhttp.New(), a.logger.With("component", "inbox")),
	})
	a.mux.Handle(inbox.DefaultPrefix+"/", h)
	// A person who opens serve's address in a browser wants the inbox.
	a.mux.Handle("GET /{$}", http.RedirectHandler(inbox.DefaultPrefix+"/", http.StatusFound))
	base, reachable := loopbackBase(addr)
	entry := h.EntryURL(base)
	if !reachable {
		a.logger.Warn("the review inbox answers only connections from this machine to a loopback address, and serve does not listen on one",
			slog.String("addr", addr.String()))
	}
	if !a.cfg.Local() {
		a.logger.Info("review inbox: open this link once, in the browser that will review", slog.String("url", entry))
	}
	return entry
}

// loopbackBase is how a browser on this machine reaches the listener at
// addr; reachable is false when addr is neither loopback nor every interface.
func loopbackBase(addr net.Addr) (base string, reachable bool) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String(), false
	}
	host := tcp.IP.String()
	switch {
	case tcp.IP.IsUnspecified():
		host = "127.0.0.1"
	case !tcp.IP.IsLoopback():
		return "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port)), false
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port)), true
}
